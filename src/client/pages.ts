/**
 * Lists the server answers in pages (a topic's partitions, find-hanging: anything that grows with
 * the number of partitions): each page's `metadata.next` is the URL of the following one.
 */
export interface Page<T> {
  data: T[];
  metadata?: { next?: string | null };
}

/** Every item of the list at `path`, following `metadata.next` to the last page. */
export async function allPages<T>(path: string, get: (path: string) => Promise<Page<T>>): Promise<T[]> {
  const base = path.replace(/\?.*$/, '');
  const out: T[] = [];
  for (let at: string | undefined = path; at !== undefined; ) {
    const page: Page<T> = await get(at);
    out.push(...page.data);
    const next = page.metadata?.next;
    at = next ? `${base}${new URL(next).search}` : undefined;
  }
  return out;
}
