/** How the records page shows a key, a value or a header: as text, as JSON, or as hex. */
export type View = 'text' | 'json' | 'hex';

export function base64ToBytes(b64: string): Uint8Array {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

export function show(bytes: Uint8Array | null, view: View): string {
  if (bytes === null) return 'null';
  if (view === 'hex') return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');
  const text = decoder.decode(bytes);
  if (view === 'text') return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return `${text}  (not JSON)`;
  }
}

export const utf8ToBase64 = (s: string): string => {
  let bin = '';
  for (const b of new TextEncoder().encode(s)) bin += String.fromCharCode(b);
  return btoa(bin);
};

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = -1;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}

/** `1 record`, `2 records`: a count with its noun, singular for one. */
export const plural = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;
