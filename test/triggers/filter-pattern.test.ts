/** The filter matcher against the kinds of pattern Lambda's event filtering documents. */
import { describe, expect, it } from 'vitest';
import { matchesAny, matchesPattern } from '../../src/triggers/filter-pattern.js';

const record = {
  topic: 'orders',
  value: { kind: 'order', city: 'Seattle', price: 120, tags: ['a', 'b'], customer: { tier: 'gold' } },
};
const m = (p: unknown) => matchesPattern(p as Record<string, unknown>, record);

describe('filter patterns', () => {
  it('matches exact values, in nested fields and in arrays', () => {
    expect(m({ value: { kind: ['order'] } })).toBe(true);
    expect(m({ value: { kind: ['refund', 'order'] } })).toBe(true);
    expect(m({ value: { kind: ['refund'] } })).toBe(false);
    expect(m({ value: { customer: { tier: ['gold'] } } })).toBe(true);
    expect(m({ value: { tags: ['b'] } })).toBe(true);
    expect(m({ topic: ['orders'], value: { price: [120] } })).toBe(true);
  });

  it('matches prefix, suffix, numeric ranges, exists and anything-but', () => {
    expect(m({ value: { city: [{ prefix: 'Sea' }] } })).toBe(true);
    expect(m({ value: { city: [{ prefix: 'Port' }] } })).toBe(false);
    expect(m({ value: { city: [{ suffix: 'tle' }] } })).toBe(true);
    expect(m({ value: { price: [{ numeric: ['>', 100, '<=', 120] }] } })).toBe(true);
    expect(m({ value: { price: [{ numeric: ['<', 100] }] } })).toBe(false);
    expect(m({ value: { price: [{ numeric: ['=', 120] }] } })).toBe(true);
    expect(m({ value: { city: [{ exists: true }] } })).toBe(true);
    expect(m({ value: { missing: [{ exists: false }] } })).toBe(true);
    expect(m({ value: { missing: [{ exists: true }] } })).toBe(false);
    expect(m({ value: { city: [{ 'anything-but': ['Portland'] }] } })).toBe(true);
    expect(m({ value: { city: [{ 'anything-but': 'Seattle' }] } })).toBe(false);
  });

  it('passes a record any pattern matches, and every record without patterns', () => {
    expect(matchesAny([{ value: { kind: ['x'] } }, { value: { kind: ['order'] } }], record)).toBe(true);
    expect(matchesAny([{ value: { kind: ['x'] } }], record)).toBe(false);
    expect(matchesAny([], record)).toBe(true);
    expect(matchesPattern({ value: { kind: ['order'] } }, { value: 'not json' })).toBe(false);
  });
});
