import { describe, expect, it } from 'vitest';
import { History } from './history';

describe('History', () => {
  it('undoes the newest entry once', async () => {
    const h = new History();
    const done: string[] = [];
    h.push({ label: 'a', undo: async () => (done.push('a'), true) });
    h.push({ label: 'b', undo: async () => (done.push('b'), true) });
    expect(await h.undo()).toBe(true);
    expect(await h.undo()).toBe(true);
    expect(await h.undo()).toBe(false);
    expect(done).toEqual(['b', 'a']);
  });

  it('keeps an entry whose undo failed, and runs one undo at a time', async () => {
    const h = new History();
    let ok = false;
    let release: () => void = () => {};
    const e = { label: 'x', undo: () => new Promise<boolean>((r) => (release = () => r(ok))) };
    h.push(e);
    const first = h.undo();
    expect(await h.undo()).toBe(false); // busy
    release();
    expect(await first).toBe(false);
    expect(h.has(e)).toBe(true);
    ok = true;
    const again = h.undo(e);
    release();
    expect(await again).toBe(true);
    expect(h.size).toBe(0);
  });

  it('undoes a given entry, not only the newest, and forgets on request', async () => {
    const h = new History();
    const a = { label: 'a', requestID: 'r1', undo: async () => true };
    const b = { label: 'b', requestID: 'r2', undo: async () => true };
    h.push(a);
    h.push(b);
    expect(await h.undo(a)).toBe(true);
    expect(h.last).toBe(b);
    h.forget((e) => e.requestID === 'r2');
    expect(h.size).toBe(0);
  });
});
