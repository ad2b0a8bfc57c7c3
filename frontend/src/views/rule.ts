// "Clean up…": a bulk operation by rule (source, inactivity, message count,
// text), with a live preview of the count and the cascade, Cancel focused,
// then one request, undoable as a whole.

import { api } from '../api';
import { h } from '../dom';
import { plural } from '../format';
import { openModal } from '../modal';
import { runRule } from '../ops';
import { RuleStore, toFilter, type RuleForm } from '../stores/rule';
import { trash } from '../stores/trash';

const fieldOf: Record<string, keyof RuleForm> = {
  source: 'source',
  inactive_for: 'inactiveFor',
  messages: 'messages',
  match: 'match',
  scope: 'scope',
  pinned: 'skipPinned',
};

/** openRuleDialog asks for a rule and runs it; sources fill the source list. */
export async function openRuleDialog(initial: Partial<RuleForm>, sources: string[]): Promise<void> {
  const st = new RuleStore(api.sessions, initial);
  const days = await trash.ensureDays();
  const errs = new Map<keyof RuleForm, HTMLElement>();
  const field = (key: keyof RuleForm, label: string, input: HTMLElement, help?: string) => {
    const err = h('div', { class: 'field-error', role: 'alert' });
    errs.set(key, err);
    return h('div', { class: 'field' }, h('label', {}, label, input), help ? h('div', { class: 'help muted small' }, help) : null, err);
  };
  const f = st.form;
  const op = h('select', { 'data-testid': 'rule-op' }, h('option', { value: 'delete' }, days > 0 ? 'Move to the trash' : 'Delete'), h('option', { value: 'archive' }, 'Archive'));
  op.value = f.op;
  const scope = h('select', { 'data-testid': 'rule-scope' }, h('option', { value: 'active' }, 'Active sessions'), h('option', { value: 'archived' }, 'Archived sessions'), h('option', { value: 'all' }, 'Active and archived'));
  scope.value = f.scope;
  const source = h('select', { 'data-testid': 'rule-source' }, h('option', { value: '' }, 'Any source'), ...sources.map((x) => h('option', { value: x }, x)));
  source.value = f.source;
  const inactive = h('input', { type: 'text', value: f.inactiveFor, placeholder: 'e.g. 30d', 'data-testid': 'rule-inactive', spellcheck: 'false' });
  const messages = h('input', { type: 'text', value: f.messages, placeholder: 'e.g. <3', 'data-testid': 'rule-messages', spellcheck: 'false' });
  const match = h('input', { type: 'text', value: f.match, placeholder: 'words in the title or messages', 'data-testid': 'rule-match' });
  const skipPinned = h('input', { type: 'checkbox', 'data-testid': 'rule-skip-pinned' });
  skipPinned.checked = f.skipPinned;
  const preview = h('p', { class: 'rule-preview', 'data-testid': 'rule-preview', 'aria-live': 'polite' }, 'Counting…');
  const body = h(
    'div',
    { class: 'rule-form' },
    h('div', { class: 'rule-grid' },
      field('op', 'Do', op),
      field('scope', 'With', scope),
      field('source', 'Source', source),
      field('inactiveFor', 'Inactive for at least', inactive, '90m, 12h, 30d, 2w; empty: any age'),
      field('messages', 'Messages', messages, 'N, <N, <=N, >N, >=N or N..M'),
      field('match', 'Containing', match),
    ),
    h('label', { class: 'check' }, skipPinned, ' Leave pinned sessions alone'),
    preview,
  );
  const read = (): Partial<RuleForm> => ({
    op: op.value as RuleForm['op'],
    scope: scope.value as RuleForm['scope'],
    source: source.value,
    inactiveFor: inactive.value,
    messages: messages.value,
    match: match.value,
    skipPinned: skipPinned.checked,
  });
  let timer = 0;
  for (const el of [op, scope, source, skipPinned]) el.addEventListener('change', () => st.set(read()));
  for (const el of [inactive, messages, match]) {
    el.addEventListener('input', () => {
      window.clearTimeout(timer);
      timer = window.setTimeout(() => st.set(read()), 300);
    });
    // Enter in a field counts again; it never runs (nor cancels) the rule
    el.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Enter') return;
      ev.preventDefault();
      ev.stopPropagation();
      window.clearTimeout(timer);
      st.set(read());
    });
  }

  let runBtn: HTMLButtonElement | null = null;
  st.changes.subscribe(() => {
    for (const e of errs.values()) e.textContent = '';
    runBtn ??= document.querySelector<HTMLButtonElement>('[data-testid=rule-run]');
    if (st.error) {
      const key = st.error.field ? fieldOf[st.error.field] : undefined;
      if (key && errs.has(key)) errs.get(key)!.textContent = st.error.message.replace(/^filter field \w+: /, '');
      preview.textContent = key ? 'Fix the rule to see what it would do.' : st.error.message;
      preview.className = 'rule-preview error-text';
    } else if (st.preview) {
      const p = st.preview;
      const verb = st.form.op === 'archive' ? 'would be archived' : days > 0 ? 'would move to the trash' : 'would be deleted for good';
      preview.textContent =
        p.count === 0
          ? 'No session matches this rule.'
          : p.cascaded > 0
            ? `${plural(p.matched, 'session')} ${p.matched === 1 ? 'matches' : 'match'}; ${plural(p.count, 'session')} ${verb}, ${p.cascaded} of them with their compression chains and delegate children.`
            : `${plural(p.count, 'session')} ${p.count === 1 ? 'matches' : 'match'} and ${verb.replace(/^would/, 'would')}.` +
            (st.form.op === 'delete' && days > 0 ? ` You can restore them for ${plural(days, 'day')}.` : '');
      preview.className = 'rule-preview';
      preview.dataset.count = String(p.count);
    }
    if (runBtn) {
      const n = st.preview?.count ?? 0;
      runBtn.disabled = st.loading || !st.preview || n === 0;
      runBtn.textContent = st.form.op === 'archive' ? `Archive ${plural(n, 'session')}` : days > 0 ? `Move ${plural(n, 'session')} to the trash` : `Delete ${plural(n, 'session')}`;
    }
  });
  const modal = openModal<boolean>({
    title: 'Clean up by rule',
    body,
    testid: 'rule-dialog',
    wide: true,
    cancelValue: false,
    buttons: [
      { label: 'Cancel', value: false, kind: 'plain', testid: 'confirm-cancel', default: true },
      { label: 'Run', value: true, kind: 'danger', testid: 'rule-run' },
    ],
  });
  void st.refresh();
  if (!(await modal) || !st.preview || st.preview.count === 0) return;
  await runRule(st.form.op, toFilter(st.form), st.preview.count);
}
