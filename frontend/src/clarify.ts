// Clarify: the model asks the person a question (the clarify tool) and its
// turn waits for the answer (Sessions.AnswerClarify), given on this page or
// another of the same process; the dialog goes when the question was
// answered elsewhere, ran out of time or its turn ended (clarify:done).
// The choices are a radio list (checkboxes when several may be picked), the
// first, the model's pick, chosen to begin with; "Other" takes the person's
// own words. Send (Enter) answers; Skip sends no answer, which the model
// reads as skipped and decides itself. Escape and a click outside skip too,
// unless words were typed: those only Skip drops.

import { api, on, toApiError } from './api';
import type { AnswerClarifyRequest, ClarifyDTO } from './api/gen/dto';
import { h } from './dom';
import { absolute } from './format';
import { openModal } from './modal';
import { showMessage } from './ops';

const open = new Map<string, AbortController>();

/** installClarify shows a dialog for every question that waits, now and later. */
export function installClarify(): void {
  on('clarify:pending', (c) => void ask(c));
  on('clarify:done', (d) => open.get(d.id)?.abort());
  api.sessions
    .pendingClarify()
    .then((list) => (list ?? []).forEach((c) => void ask(c)))
    .catch(() => undefined); // an older backend, or none yet: the events still come
}

/** Draft is what the person picked and typed, kept when the dialog opens again. */
interface Draft {
  picked: string[];
  otherPicked: boolean;
  other: string;
}

async function ask(c: ClarifyDTO, draft?: Draft): Promise<void> {
  if (open.has(c.id)) return;
  const ctl = new AbortController();
  open.set(c.id, ctl);
  const choices = c.choices ?? [];
  const multi = c.multi_select && choices.length > 0;
  const kind = multi ? 'checkbox' : 'radio';
  const name = `clarify-${c.id}`;
  const questionID = `clarify-question-${c.id}`;
  const boxes = choices.map((choice, i) =>
    h('input', { type: kind, name, value: choice, 'data-testid': 'clarify-choice', checked: draft ? draft.picked.includes(choice) : i === 0 }),
  );
  // "Other": the person's own words, picked as a choice is (an open
  // question has nothing else).
  const otherPick = choices.length ? h('input', { type: kind, name, value: '', 'data-testid': 'clarify-other-pick', checked: !!draft?.otherPicked }) : null;
  const other = h('input', {
    type: 'text',
    class: 'clarify-other',
    'data-testid': 'clarify-other',
    autocomplete: 'off',
    placeholder: choices.length ? 'Other (your own answer)' : 'Your answer',
    'aria-label': choices.length ? 'Other (your own answer)' : 'Your answer',
  });
  other.value = draft?.other ?? '';
  const kept = h('p', { class: 'muted small', role: 'status', 'data-testid': 'clarify-kept', hidden: true }, 'What you typed is kept: Send it, or Skip to drop it.');

  const answer = (): AnswerClarifyRequest => {
    const words = other.value.trim();
    const own = !otherPick || otherPick.checked ? words : '';
    const picked = boxes.filter((b) => b.checked).map((b) => b.value);
    return multi ? { choices: picked, response: own } : { response: picked[0] ?? own };
  };
  const body = h(
    'div',
    { class: 'clarify', 'data-id': c.id },
    c.of > 1 ? h('p', { class: 'muted small clarify-progress', 'data-testid': 'clarify-progress' }, `Question ${c.index} of ${c.of}`) : null,
    h('p', { class: 'clarify-question', id: questionID, 'data-testid': 'clarify-question' }, c.question),
    choices.length
      ? h(
          'div',
          { class: 'clarify-choices', role: multi ? 'group' : 'radiogroup', 'aria-labelledby': questionID },
          ...boxes.map((b) => h('label', { class: 'clarify-choice' }, b, h('span', {}, b.value))),
          h('div', { class: 'clarify-choice' }, h('label', { class: 'clarify-other-label' }, otherPick, h('span', {}, 'Other:')), other),
        )
      : h('div', { class: 'clarify-choices' }, other),
    multi ? h('p', { class: 'muted small' }, 'Pick any that apply.') : null,
    c.expires_at ? h('p', { class: 'muted' }, `Without an answer by ${absolute(c.expires_at)} the agent decides itself.`) : null,
    kept,
  );

  const chosen = openModal<'send' | 'skip'>({
    title: c.of > 1 ? c.title || 'Questions from the agent' : 'The agent asks',
    body,
    testid: 'clarify',
    cancelValue: 'skip',
    signal: ctl.signal,
    // Escape or a click outside would drop the words typed: they stay.
    canCancel: () => {
      if (!other.value.trim()) return true;
      kept.hidden = false;
      other.focus();
      return false;
    },
    buttons: [
      { label: 'Skip', value: 'skip', kind: 'plain', testid: 'clarify-skip' },
      { label: 'Send', value: 'send', kind: 'primary', testid: 'clarify-send', default: true },
    ],
  });
  // Send waits for an answer: a choice, or words.
  const send = body.closest('[role=dialog]')?.querySelector<HTMLButtonElement>('[data-testid=clarify-send]');
  const update = () => {
    const a = answer();
    if (send) send.disabled = !a.response && !a.choices?.length;
  };
  other.addEventListener('input', () => {
    if (otherPick && other.value.trim()) otherPick.checked = true;
    update();
  });
  body.addEventListener('change', update);
  update();
  (boxes.find((b) => b.checked) ?? boxes[0] ?? other).focus();

  const value = await chosen;
  open.delete(c.id);
  if (ctl.signal.aborted) return; // answered elsewhere, out of time, or the turn ended
  const given: AnswerClarifyRequest = value === 'send' ? answer() : { response: '', choices: [] };
  try {
    await api.sessions.answerClarify(c.id, given);
  } catch (e) {
    const err = toApiError(e);
    showMessage('warn', 'The answer was not recorded', err.message);
    // Not found: answered elsewhere or out of time, nothing waits. Anything
    // else: the question still waits, asked again as it was left.
    if (err.code !== 'not_found') {
      void ask(c, { picked: boxes.filter((b) => b.checked).map((b) => b.value), otherPicked: !!otherPick?.checked, other: other.value });
    }
  }
}
