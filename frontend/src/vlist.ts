// A virtualised list of fixed-height rows: only the visible rows plus an
// overscan exist in the DOM, recycled as the viewport scrolls; a spacer
// sized total × rowHeight gives the scrollbar its true length.

import { h } from './dom';

export interface VirtualListOptions {
  rowHeight: number;
  overscan: number;
  /** makes an empty row element (called once per pooled row) */
  create: () => HTMLElement;
  /** fills row el for index i (i < total) */
  render: (el: HTMLElement, index: number) => void;
  /** a row left the viewport and is hidden in the pool */
  release?: (el: HTMLElement) => void;
  /** told the last index the viewport needs, after every render */
  onRange?: (first: number, last: number) => void;
}

export class VirtualList {
  readonly viewport: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly pool: HTMLElement[] = [];
  private readonly assigned = new Map<HTMLElement, number>();
  private total = 0;
  private rowHeight: number;
  private frame = 0;
  private lastFirst = -1;
  private lastLast = -1;
  private forced = true;

  constructor(private readonly o: VirtualListOptions, attrs: Record<string, string> = {}) {
    this.rowHeight = o.rowHeight;
    this.spacer = h('div', { class: 'vlist-spacer' });
    this.viewport = h('div', { class: 'vlist', ...attrs }, this.spacer);
    this.viewport.addEventListener('scroll', () => this.schedule(), { passive: true });
    new ResizeObserver(() => this.schedule(true)).observe(this.viewport);
  }

  get count(): number {
    return this.total;
  }

  get height(): number {
    return this.rowHeight;
  }

  setRowHeight(px: number): void {
    if (px === this.rowHeight) return;
    this.rowHeight = px;
    this.setTotal(this.total);
  }

  setTotal(n: number): void {
    this.total = Math.max(0, n);
    this.spacer.style.height = `${this.total * this.rowHeight}px`;
    this.schedule(true);
  }

  /** refresh re-renders the visible rows (their data changed). */
  refresh(): void {
    this.schedule(true);
  }

  /** renderNow renders synchronously (e.g. before focusing a row). */
  renderNow(): void {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.forced = true;
    this.render();
  }

  private schedule(force = false): void {
    if (force) this.forced = true;
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  visibleRange(): [number, number] {
    const top = this.viewport.scrollTop;
    const hgt = this.viewport.clientHeight || 600;
    const first = Math.floor(top / this.rowHeight);
    const last = Math.min(this.total - 1, Math.ceil((top + hgt) / this.rowHeight) - 1);
    return [first, last];
  }

  /** rowsPerPage is how many rows fit in the viewport. */
  rowsPerPage(): number {
    return Math.max(1, Math.floor((this.viewport.clientHeight || 600) / this.rowHeight));
  }

  /** scrollToIndex brings row i into view (minimal scroll). */
  scrollToIndex(i: number): void {
    const top = i * this.rowHeight;
    const bottom = top + this.rowHeight;
    const vt = this.viewport.scrollTop;
    const vh = this.viewport.clientHeight;
    if (top < vt) this.viewport.scrollTop = top;
    else if (bottom > vt + vh) this.viewport.scrollTop = bottom - vh;
    this.renderNow();
  }

  /** elementFor is the row element showing index i, if rendered. */
  elementFor(i: number): HTMLElement | null {
    for (const [el, idx] of this.assigned) if (idx === i) return el;
    return null;
  }

  private render(): void {
    const [vFirst, vLast] = this.visibleRange();
    const first = Math.max(0, vFirst - this.o.overscan);
    const last = Math.min(this.total - 1, vLast + this.o.overscan);
    const forced = this.forced;
    if (!forced && first === this.lastFirst && last === this.lastLast) return;
    this.forced = false;
    this.lastFirst = first;
    this.lastLast = last;
    const want = Math.max(0, last - first + 1);
    while (this.pool.length < want) {
      const el = this.o.create();
      el.classList.add('vrow');
      el.style.height = `${this.rowHeight}px`;
      this.pool.push(el);
      this.viewport.appendChild(el);
    }
    // Rows keep their index when still in range, so the DOM churns little.
    const keep = new Map<number, HTMLElement>();
    const free: HTMLElement[] = [];
    for (let p = 0; p < this.pool.length; p++) {
      const el = this.pool[p]!;
      const idx = this.assigned.get(el);
      if (p < want && idx !== undefined && idx >= first && idx <= last && !keep.has(idx)) keep.set(idx, el);
      else free.push(el);
    }
    for (let i = first; i <= last; i++) {
      const kept = keep.get(i);
      const el = kept ?? free.pop()!;
      if (!kept || forced) {
        this.assigned.set(el, i);
        el.hidden = false;
        el.style.height = `${this.rowHeight}px`;
        el.style.transform = `translateY(${i * this.rowHeight}px)`;
        this.o.render(el, i);
      }
    }
    for (const el of free) {
      if (!el.hidden) {
        el.hidden = true;
        this.o.release?.(el);
      }
      this.assigned.delete(el);
    }
    this.o.onRange?.(vFirst, vLast);
  }
}
