// What the trash holds and how long it keeps sessions: the list's trash
// tab, the delete confirmations ("You can restore them for 30 days") and the
// transcript of a trashed session read it here.

import { api, missing } from '../api';
import type { TrashDTO } from '../types';
import { Emitter } from './emitter';

export interface TrashSource {
  summary(): Promise<TrashDTO>;
}

const day = 24 * 3600 * 1000;

export class TrashStore {
  readonly changes = new Emitter<void>();
  summary: TrashDTO | null = null;
  /** the server has no trash (an older one): deletes are for good */
  unsupported = false;

  constructor(private readonly src: TrashSource) {}

  async load(): Promise<TrashDTO | null> {
    try {
      this.summary = await this.src.summary();
      this.unsupported = false;
    } catch (e) {
      if (missing(e)) this.unsupported = true;
      else console.warn('trash:', e);
    }
    this.changes.emit();
    return this.summary;
  }

  /** days is how long a delete stays restorable; 0 when deletes are for
   * good (trash_days 0, or no trash). null until known. */
  get days(): number | null {
    if (this.unsupported) return 0;
    return this.summary ? this.summary.trash_days : null;
  }

  /** ensureDays loads the summary once if needed and says the days. */
  async ensureDays(): Promise<number> {
    if (this.days === null) await this.load();
    return this.days ?? 0;
  }
}

/** restoreFor says how long something purged at purgeAfter stays
 * restorable: "for 30 days", "for 5 hours", "until it is purged". */
export function restoreFor(purgeAfter: string | null | undefined, fallbackDays: number | null, now = Date.now()): string {
  const t = purgeAfter ? Date.parse(purgeAfter) : NaN;
  if (Number.isNaN(t)) return fallbackDays ? `for ${plural(fallbackDays, 'day')}` : 'until it is purged';
  const left = t - now;
  if (left >= day) return `for ${plural(Math.round(left / day), 'day')}`;
  const hours = Math.max(1, Math.round(left / 3600_000));
  return `for ${plural(hours, 'hour')}`;
}

function plural(n: number, one: string): string {
  return `${n} ${n === 1 ? one : `${one}s`}`;
}

/** trash is the page's one trash summary. */
export const trash = new TrashStore(api.trash);
