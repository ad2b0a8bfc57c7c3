// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { highlight, markRanges, matchRanges, queryWords } from './highlight';

describe('highlight', () => {
  it('finds every word, case-insensitively, longest first at one place', () => {
    expect(queryWords(' "Staging"  END* ')).toEqual(['staging', 'end']);
    expect(matchRanges('Staging endpoint, staging', ['staging', 'endpoint', 'end'])).toEqual([
      [0, 7],
      [8, 16],
      [18, 25],
    ]);
  });

  it('marks ranges and skips ones that are out of order or out of bounds', () => {
    const nodes = markRanges('abcdef', [[1, 3], [2, 4], [5, 99]]);
    expect(nodes.map((n) => (n instanceof HTMLElement ? `[${n.textContent}]` : n.textContent)).join('')).toBe('a[bc]def');
    expect(highlight('', 'x').map((n) => n.textContent)).toEqual(['']);
  });
});
