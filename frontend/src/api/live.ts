// Live events from the app layer: window.runtime.EventsOn in the window, an
// EventSource on /api/stream on the dashboard. One subscription per event
// name at the transport; stores subscribe here (`on`), as often as they like.

import { liveEventNames, type LiveEvents } from '../consts/events';
import { isDesktop } from './transport';

type Listener<K extends keyof LiveEvents> = (data: LiveEvents[K]) => void;
const listeners = new Map<string, Set<(data: unknown) => void>>();
const reconnectListeners = new Set<() => void>();
let started = false;

/** dispatch hands one event to its listeners (exported for tests). */
export function dispatch(name: string, data: unknown): void {
  for (const fn of listeners.get(name) ?? []) {
    try {
      fn(data);
    } catch (e) {
      console.error(`live event ${name}:`, e);
    }
  }
}

/** startLive connects the live events once. */
export function startLive(): void {
  if (started) return;
  started = true;
  if (isDesktop()) {
    const on = window.runtime?.EventsOn;
    if (!on) return;
    for (const name of liveEventNames) on(name, (data: unknown) => dispatch(name, data));
    return;
  }
  if (typeof EventSource === 'undefined') return;
  let broken = false;
  const source = new EventSource('/api/stream', { withCredentials: true });
  for (const name of liveEventNames) {
    source.addEventListener(name, (ev: MessageEvent<string>) => {
      let data: unknown;
      try {
        data = JSON.parse(ev.data);
      } catch {
        return;
      }
      dispatch(name, data);
    });
  }
  source.addEventListener('error', () => {
    broken = true;
  });
  source.addEventListener('open', () => {
    if (!broken) return;
    broken = false;
    for (const fn of reconnectListeners) fn(); // events may have been missed
  });
}

/** on subscribes to a live event; it returns the unsubscribe function. */
export function on<K extends keyof LiveEvents>(name: K, fn: Listener<K>): () => void {
  let set = listeners.get(name);
  if (!set) {
    set = new Set();
    listeners.set(name, set);
  }
  const f = fn as (data: unknown) => void;
  set.add(f);
  return () => set?.delete(f);
}

/** onReconnect is told when the dashboard's stream came back after a break. */
export function onReconnect(fn: () => void): () => void {
  reconnectListeners.add(fn);
  return () => reconnectListeners.delete(fn);
}
