import { afterEach, describe, expect, it, vi } from 'vitest';
import { onSessionsChanged, sessionsChanged } from './ops';

describe('sessionsChanged', () => {
  afterEach(() => vi.useRealTimers());

  it('settles once the views that reload have their data, so the result is drawn with them', async () => {
    let release = (): void => {};
    const reloaded = new Promise<void>((r) => (release = r));
    const seen: string[] = [];
    onSessionsChanged((op) => {
      seen.push(op);
      return reloaded;
    });
    let settled = false;
    const p = sessionsChanged('archive').then(() => (settled = true));
    await Promise.resolve();
    expect(seen).toEqual(['archive']);
    expect(settled).toBe(false);
    release();
    await p;
    expect(settled).toBe(true);
  });

  it('a reload that hangs or fails holds the result back at most 500 ms', async () => {
    vi.useFakeTimers();
    onSessionsChanged(() => new Promise<void>(() => {}));
    onSessionsChanged(() => Promise.reject(new Error('down')));
    onSessionsChanged(() => {
      throw new Error('broken listener');
    });
    let settled = false;
    const p = sessionsChanged('delete').then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(499);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await p;
    expect(settled).toBe(true);
  });
});
