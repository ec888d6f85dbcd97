/**
 * The principal of a TLS client certificate, as Kafka's DefaultKafkaPrincipalBuilder names it: the
 * subject's distinguished name (RFC 2253: most specific first, `CN=alice,OU=eng,O=Acme`) passed
 * through `ssl.principal.mapping.rules`, then `User:<name>`. The rules are Kafka's: a
 * comma-separated list of `DEFAULT` (the DN as it is) and `RULE:pattern/replacement/[LU]` (the
 * pattern must match the whole DN; the replacement takes `$1`..., then L or U changes its case);
 * the first rule that applies names the principal, and a DN no rule applies to is refused.
 */
import { X509Certificate } from 'node:crypto';

interface Rule {
  /** undefined: DEFAULT */
  pattern?: string;
  replacement?: string;
  toCase?: 'L' | 'U';
}

const RULE = String.raw`(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)(.*?)|(.*?)`;
const SPLITTER = new RegExp(String.raw`\s*(${RULE})\s*(,\s*|$)`, 'gy');

export class PrincipalMappingError extends Error {}

/** Parses `ssl.principal.mapping.rules`; throws with the rule at fault (a bad config stops the server at start). */
export function parseMappingRules(text = 'DEFAULT'): Rule[] {
  const rules: Rule[] = [];
  const trimmed = text.trim();
  SPLITTER.lastIndex = 0;
  while (SPLITTER.lastIndex < trimmed.length) {
    const at = SPLITTER.lastIndex;
    const m = SPLITTER.exec(trimmed);
    if (!m || m[0] === '') throw new PrincipalMappingError(`Invalid rule: ${trimmed.slice(at)}`);
    const [, , isDefault, pattern, replacement, toCase, rest, other] = m;
    if (isDefault) rules.push({});
    else if (pattern !== undefined) {
      if (rest) throw new PrincipalMappingError(`Invalid rule: \`${m[1]}\`, unmatched substring: \`${rest}\``);
      try {
        new RegExp(pattern);
      } catch (e) {
        throw new PrincipalMappingError(`Invalid rule pattern ${pattern}: ${(e as Error).message}`);
      }
      rules.push({ pattern, replacement: replacement!, ...(toCase ? { toCase: toCase as 'L' | 'U' } : {}) });
    } else if (other) throw new PrincipalMappingError(`Invalid rule: ${other}`);
  }
  return rules;
}

/** Java's replacement syntax (`\$` a literal dollar, `\\` a backslash) in JavaScript's (`$$`). */
const jsReplacement = (java: string) => java.replace(/\\(.)/g, (_, c: string) => (c === '$' ? '$$' : c));

/** The name the first applicable rule gives a DN; throws PrincipalMappingError when none applies. */
export function mapDistinguishedName(dn: string, rules: readonly Rule[]): string {
  for (const r of rules) {
    if (r.pattern === undefined) return dn;
    if (!new RegExp(`^(?:${r.pattern})$`).test(dn)) continue;
    // As Java's replaceAll: every match of the pattern replaced (a whole-DN match, and an empty one at the end if it can).
    const name = dn.replace(new RegExp(r.pattern, 'g'), jsReplacement(r.replacement!));
    return r.toCase === 'L' ? name.toLowerCase() : r.toCase === 'U' ? name.toUpperCase() : name;
  }
  throw new PrincipalMappingError(`No rules apply to ${dn}`);
}

/** A certificate's subject in RFC 2253 form (X500Principal.getName()), from the DER bytes. */
export function subjectDistinguishedName(der: Uint8Array): string {
  // Node gives `C=US\nO=Acme\, Inc.\nCN=alice`: the certificate's RDN order, one per line, values
  // already escaped as RFC 2253 escapes them; RFC 2253 writes the most specific first.
  return new X509Certificate(der).subject.split('\n').filter(Boolean).reverse().join(',');
}
