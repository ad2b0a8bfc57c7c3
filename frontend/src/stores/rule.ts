// A rule for bulk operations ("clean up"): the form's values, the filter
// they make, the live preview of what it would do, and the field a server
// error names. No DOM; views/rule.ts shows it.

import { toApiError, type BulkOp } from '../api';
import type { FilterDTO, PreviewDTO } from '../types';
import { Emitter } from './emitter';

export interface RuleForm {
  op: Extract<BulkOp, 'delete' | 'archive'>;
  /** active, archived, or all (both) */
  scope: 'active' | 'archived' | 'all';
  source: string;
  inactiveFor: string;
  messages: string;
  match: string;
  skipPinned: boolean;
}

export interface RuleSource {
  previewRule(op: BulkOp, filter: FilterDTO): Promise<PreviewDTO>;
}

/** toFilter is the shared filter the form means (empty fields left out). */
export function toFilter(f: RuleForm): FilterDTO {
  const out: FilterDTO = { scope: f.scope };
  if (f.source) out.source = f.source;
  if (f.inactiveFor.trim()) out.inactive_for = f.inactiveFor.trim();
  if (f.messages.trim()) out.messages = f.messages.replace(/\s+/g, '');
  if (f.match.trim()) out.match = f.match.trim();
  if (f.skipPinned) out.pinned = false;
  return out;
}

/** errorField is the filter field a server message names
 * ("filter field messages: ..."), if any. */
export function errorField(message: string): string | null {
  return /filter field (\w+)/.exec(message)?.[1] ?? null;
}

export class RuleStore {
  readonly changes = new Emitter<void>();
  form: RuleForm;
  preview: PreviewDTO | null = null;
  error: { field: string | null; message: string } | null = null;
  loading = false;
  private gen = 0;

  constructor(
    private readonly src: RuleSource,
    initial: Partial<RuleForm> = {},
  ) {
    this.form = { op: 'delete', scope: 'active', source: '', inactiveFor: '30d', messages: '', match: '', skipPinned: true, ...initial };
  }

  /** narrow is true when the rule says more than "everything in scope". */
  get narrow(): boolean {
    const f = this.form;
    return !!(f.source || f.inactiveFor.trim() || f.messages.trim() || f.match.trim());
  }

  set(patch: Partial<RuleForm>): void {
    this.form = { ...this.form, ...patch };
    void this.refresh();
  }

  /** refresh asks the server what the rule would do now. */
  async refresh(): Promise<void> {
    const gen = ++this.gen;
    this.loading = true;
    this.changes.emit();
    try {
      const p = await this.src.previewRule(this.form.op, toFilter(this.form));
      if (gen !== this.gen) return;
      this.preview = p;
      this.error = null;
    } catch (raw) {
      if (gen !== this.gen) return;
      const e = toApiError(raw);
      this.preview = null;
      this.error = { field: errorField(e.message), message: e.message };
    }
    this.loading = false;
    this.changes.emit();
  }
}
