// Approvals: a tool call a plugin wants approved waits in the turn loop
// until the person answers (Sessions.AnswerApproval), on this page or
// another of the same dashboard; its dialog goes when it was answered
// elsewhere or ran out of time (approval:done). Deny has the focus: Enter or Escape refuses;
// "Stop the turn" stops the turn that waits (Sessions.StopTurn); "Allow for this session"
// approves it and later asks of the same rule in this conversation; "Always allow" (when
// it can be kept) also every later ask of the rule in the profile, until it is revoked
// in Settings.

import { api, on, toApiError } from './api';
import type { ApprovalDTO } from './api/gen/dto';
import { h } from './dom';
import { absolute } from './format';
import { openModal } from './modal';
import { showMessage } from './ops';

const open = new Map<string, AbortController>();

/** installApprovals shows a dialog for every approval that waits, now and later. */
export function installApprovals(): void {
  on('approval:pending', (a) => void ask(a));
  on('approval:done', (d) => open.get(d.id)?.abort());
  api.sessions
    .pendingApprovals()
    .then((list) => (list ?? []).forEach((a) => void ask(a)))
    .catch(() => undefined); // an older backend, or none yet: the events still come
}

/** argsText shows the arguments as indented JSON (as they came when they are not JSON). */
export function argsText(args: string): string {
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}

// commandText is the command of a terminal call Atrium itself asks about
// (its arguments as they are when they hold none).
export function commandText(args: string): string {
  try {
    const v = JSON.parse(args) as { command?: unknown };
    if (typeof v.command === 'string') return v.command;
  } catch {
    // shown as they are
  }
  return argsText(args);
}

async function ask(a: ApprovalDTO): Promise<void> {
  if (open.has(a.id)) return;
  const ctl = new AbortController();
  open.set(a.id, ctl);
  const body = h(
    'div',
    { class: 'approval', 'data-id': a.id },
    a.plugin
      ? h('p', {}, 'The plugin ', h('strong', {}, a.plugin), ' wants a person to approve a call of the tool ', h('strong', {}, a.tool), ' with:')
      : h('p', {}, 'The ', h('strong', {}, a.tool), ' wants to run this command:'),
    h('pre', { class: 'approval-args', 'data-testid': 'approval-args' }, a.plugin ? argsText(a.args) : commandText(a.args)),
    a.message ? h('p', { class: 'approval-message', 'data-testid': 'approval-message' }, a.message) : null,
    h('p', { class: 'muted' }, `Without an answer by ${absolute(a.expires_at)} it is refused.`),
    a.can_always && a.pattern_key
      ? h('p', { class: 'muted small', 'data-testid': 'approval-rule' }, '“Always allow” allows the rule ', h('code', {}, a.pattern_key), ' from now on, in every conversation and scheduled run of this profile, until you revoke it in Settings.')
      : null,
  );
  const answer = await openModal<boolean | 'stop' | 'session' | 'always'>({
    title: 'Approve a tool call?',
    body,
    testid: 'approval',
    wide: true, // four or five answers side by side
    cancelValue: false,
    signal: ctl.signal,
    buttons: [
      { label: 'Deny', value: false, kind: 'plain', testid: 'approval-deny', default: true },
      // The turn waiting here can be stopped from its dialog, which covers
      // the composer's Stop.
      { label: 'Stop the turn', value: 'stop', kind: 'plain', testid: 'approval-stop' },
      { label: 'Allow for this session', value: 'session', kind: 'plain', testid: 'approval-session' },
      ...(a.can_always ? [{ label: 'Always allow', value: 'always' as const, kind: 'plain' as const, testid: 'approval-always' }] : []),
      { label: 'Approve', value: true, kind: 'primary', testid: 'approval-approve' },
    ],
  });
  open.delete(a.id);
  if (ctl.signal.aborted) return; // decided elsewhere, or out of time
  try {
    if (answer === 'stop') await api.sessions.stop(a.session_id);
    else if (answer === 'session' || answer === 'always') await api.sessions.answerApproval(a.id, true, answer);
    else await api.sessions.answerApproval(a.id, answer, 'once');
  } catch (e) {
    const err = toApiError(e);
    showMessage('warn', answer === 'stop' ? 'The turn was not stopped' : 'The approval was not recorded', err.message);
    // An "always" that cannot be kept is refused before it is taken: the
    // call still waits, for another answer.
    if (answer === 'always' && err.code === 'invalid') void ask({ ...a, can_always: false });
  }
}
