// What the user did that can be taken back, newest last: Ctrl+Z, the result
// panel's Undo and the activity panel undo the newest (or a given) entry
// once. An entry knows how to undo itself (unarchive what was archived,
// restore what went to the trash, the title a rename replaced, ...).

import { Emitter } from './emitter';

export interface Undoable {
  /** what is undone, said to the user ("Archive of 3 sessions") */
  label: string;
  /** the request whose effect is undone, when there is one */
  requestID?: string;
  undo: () => Promise<boolean>;
}

const maxEntries = 50;

export class History {
  readonly changes = new Emitter<void>();
  private readonly entries: Undoable[] = [];
  private busy = false;

  push(e: Undoable): void {
    this.entries.push(e);
    if (this.entries.length > maxEntries) this.entries.shift();
    this.changes.emit();
  }

  get last(): Undoable | undefined {
    return this.entries[this.entries.length - 1];
  }

  get size(): number {
    return this.entries.length;
  }

  /** has is true while entry e can still be undone. */
  has(e: Undoable): boolean {
    return this.entries.includes(e);
  }

  /** undo takes back e (the newest by default), once; false when there was
   * nothing to undo, it is running already, or the undo failed (it stays). */
  async undo(e: Undoable | undefined = this.last): Promise<boolean> {
    if (!e || this.busy || !this.entries.includes(e)) return false;
    this.busy = true;
    try {
      const ok = await e.undo();
      if (ok) {
        const i = this.entries.indexOf(e);
        if (i >= 0) this.entries.splice(i, 1);
        this.changes.emit();
      }
      return ok;
    } finally {
      this.busy = false;
    }
  }

  /** forget drops the entries of requests that can no longer be undone. */
  forget(pred: (e: Undoable) => boolean): void {
    const before = this.entries.length;
    for (let i = this.entries.length - 1; i >= 0; i--) if (pred(this.entries[i]!)) this.entries.splice(i, 1);
    if (this.entries.length !== before) this.changes.emit();
  }
}

/** history is the one undo stack of the page. */
export const history = new History();
