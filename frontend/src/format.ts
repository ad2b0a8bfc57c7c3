// Formatting of times and counts.

const rtf = typeof Intl !== 'undefined' && 'RelativeTimeFormat' in Intl ? new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' }) : null;
const abs = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const short = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'short' });
const nf = new Intl.NumberFormat();

const units: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['week', 7 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
  ['second', 1],
];

function toDate(iso: string | undefined | null): Date | null {
  if (!iso) return null;
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** relative is "5 minutes ago" and the like. */
export function relative(iso: string | undefined | null, now = Date.now()): string {
  const d = toDate(iso);
  if (!d) return '';
  const secs = Math.round((d.getTime() - now) / 1000);
  if (Math.abs(secs) < 45) return 'just now';
  for (const [unit, size] of units) {
    if (Math.abs(secs) >= size || unit === 'second') {
      const n = Math.round(secs / size);
      return rtf ? rtf.format(n, unit) : `${Math.abs(n)} ${unit}${Math.abs(n) === 1 ? '' : 's'} ${n < 0 ? 'ago' : 'from now'}`;
    }
  }
  return '';
}

export function absolute(iso: string | undefined | null): string {
  const d = toDate(iso);
  return d ? abs.format(d) : '';
}

export function shortTime(iso: string | undefined | null): string {
  const d = toDate(iso);
  return d ? short.format(d) : '';
}

export function num(n: number | null | undefined): string {
  return n === null || n === undefined ? '?' : nf.format(n);
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${nf.format(n)} ${n === 1 ? one : many}`;
}

export function shortID(id: string): string {
  return id.length > 13 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id;
}

/** bytes is a size for people: 512 B, 3.4 KB, 12 MB, 1.2 GB. */
export function bytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
}

/** runningWhere names where a turn runs, from its platform. */
export function runningWhere(platform: string): string {
  switch (platform) {
    case 'cron':
      return 'the scheduler';
    case 'cli':
      return 'a terminal';
    case 'desktop':
      return 'the window';
    case 'dashboard':
      return 'the dashboard';
  }
  return `the gateway (${platform})`;
}

/** inWords is a status line of the terminal's and the chat's ("⏱️ Rate
 * limited. Waiting 4.2s (attempt 1/3)...") without its leading symbol: the
 * page says it in words, and needs no emoji font to show it. */
export function inWords(status: string): string {
  return status.replace(/^[^\p{L}\p{N}]+/u, '');
}

/** countdown is a model status that says how long the turn waits
 * ("Waiting 4.2s") with the wait left after elapsedMs, in whole seconds,
 * then "Trying again now"; any other status as it is. */
export function countdown(status: string, elapsedMs: number): string {
  const m = /Waiting (\d+(?:\.\d+)?)s/.exec(status);
  if (!m || elapsedMs < 1000) return status;
  const left = Math.ceil(Number(m[1]) - elapsedMs / 1000);
  return status.replace(m[0], left > 0 ? `Waiting ${left}s` : 'Trying again now');
}
