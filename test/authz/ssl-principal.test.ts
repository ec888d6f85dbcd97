import { describe, expect, it } from 'vitest';
import { mapDistinguishedName, parseMappingRules } from '../../src/authz/ssl-principal.js';

describe('ssl.principal.mapping.rules', () => {
  // The examples of Kafka's documentation for ssl.principal.mapping.rules.
  const rules = parseMappingRules(
    'RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,' +
      'RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT',
  );

  it('maps a DN by the first rule that matches it whole, with back references and a case change', () => {
    expect(mapDistinguishedName('CN=kafka-server1,OU=ServiceUsers,O=Org,C=US', rules)).toBe('kafka-server1');
    expect(mapDistinguishedName('CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US', rules)).toBe(
      'duke@javasoft',
    );
    expect(mapDistinguishedName('CN=ADMIN.OPS,O=x', rules)).toBe('admin.ops');
    expect(mapDistinguishedName('O=no common name', rules)).toBe('O=no common name'); // DEFAULT: the DN itself
    expect(mapDistinguishedName('CN=alice', parseMappingRules('RULE:^CN=(.*)$/$1/U'))).toBe('ALICE');
  });

  it('refuses a DN no rule applies to, and a malformed rule at parse time', () => {
    expect(() => mapDistinguishedName('CN=bob', parseMappingRules('RULE:^CN=alice$/alice/'))).toThrow(
      /No rules apply to CN=bob/,
    );
    expect(() => parseMappingRules('RULE:^(.*)$/$1/X')).toThrow(/unmatched substring/);
    expect(() => parseMappingRules('CN=alice')).toThrow(/Invalid rule/);
    expect(() => parseMappingRules('RULE:(/x/')).toThrow(/Invalid rule pattern/);
    expect(parseMappingRules(undefined)).toEqual([{}]); // DEFAULT
  });
});
