// @vitest-environment jsdom
import { beforeEach, describe, expect, it, vi } from 'vitest';

const listeners = new Map<string, (d: unknown) => void>();
const answerApproval = vi.fn(async () => []);
const pendingApprovals = vi.fn(async () => [] as unknown[]);

vi.mock('./api', () => ({
  api: { sessions: { answerApproval, pendingApprovals } },
  on: (name: string, fn: (d: unknown) => void) => {
    listeners.set(name, fn);
    return () => listeners.delete(name);
  },
  toApiError: (e: unknown) => ({ code: (e as { code?: string }).code ?? 'internal', message: String(e) }),
}));

const showMessage = vi.fn();
vi.mock('./ops', () => ({ showMessage }));

const { argsText, installApprovals } = await import('./approvals');

const approval = (id: string, canAlways = false) => ({
  id,
  pattern_key: 'plugin_rule:deploy:prod',
  can_always: canAlways,
  session_id: 's1',
  plugin: 'guard',
  tool: 'echo',
  args: '{"text":"hi"}',
  message: 'echo repeats what it is given',
  expires_at: '2026-12-05T12:00:00Z',
});

const dialog = () => document.querySelector<HTMLElement>('[data-testid=approval]');
const flush = () => new Promise((r) => setTimeout(r, 0));

describe('approvals', () => {
  beforeEach(() => {
    document.body.innerHTML = '';
    listeners.clear();
    answerApproval.mockClear();
    installApprovals();
  });

  it('shows the plugin, the tool, its arguments and the reason; Approve answers yes', async () => {
    listeners.get('approval:pending')!(approval('a1'));
    const d = dialog()!;
    expect(d.textContent).toContain('guard');
    expect(d.textContent).toContain('echo repeats what it is given');
    expect(d.querySelector('[data-testid=approval-args]')!.textContent).toBe('{\n  "text": "hi"\n}');
    // Deny has the focus: Enter refuses unless Approve is chosen.
    expect(document.activeElement?.getAttribute('data-testid')).toBe('approval-deny');
    d.querySelector<HTMLButtonElement>('[data-testid=approval-approve]')!.click();
    await flush();
    expect(answerApproval).toHaveBeenCalledWith('a1', true, 'once');
    expect(dialog()).toBeNull();
  });

  it('a terminal command Atrium asks about shows the command and its rule', async () => {
    listeners.get('approval:pending')!({
      ...approval('t1', true),
      plugin: '',
      tool: 'terminal',
      pattern_key: 'recursive delete',
      args: '{"command":"rm -rf build/"}',
      message: 'This command could destroy data: recursive delete.',
    });
    const d = dialog()!;
    expect(d.textContent).toContain('The terminal wants to run this command:');
    expect(d.textContent).not.toContain('The plugin');
    expect(d.querySelector('[data-testid=approval-args]')!.textContent).toBe('rm -rf build/');
    expect(d.querySelector('[data-testid=approval-rule]')!.textContent).toContain('recursive delete');
    d.querySelector<HTMLButtonElement>('[data-testid=approval-deny]')!.click();
    await flush();
    expect(answerApproval).toHaveBeenCalledWith('t1', false, 'once');
  });

  it('Escape denies', async () => {
    listeners.get('approval:pending')!(approval('a2'));
    dialog()!.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    await flush();
    expect(answerApproval).toHaveBeenCalledWith('a2', false, 'once');
  });

  it('"Allow for this session" approves with the session scope', async () => {
    listeners.get('approval:pending')!(approval('a4'));
    dialog()!.querySelector<HTMLButtonElement>('[data-testid=approval-session]')!.click();
    await flush();
    expect(answerApproval).toHaveBeenCalledWith('a4', true, 'session');
    expect(dialog()).toBeNull();
  });

  it('"Always allow" is offered only where it can be kept, names its rule, and approves with the always scope', async () => {
    listeners.get('approval:pending')!(approval('a5'));
    expect(dialog()!.querySelector('[data-testid=approval-always]')).toBeNull();
    expect(dialog()!.querySelector('[data-testid=approval-rule]')).toBeNull();
    dialog()!.querySelector<HTMLButtonElement>('[data-testid=approval-deny]')!.click();
    await flush();
    listeners.get('approval:pending')!(approval('a6', true));
    expect(dialog()!.querySelector('[data-testid=approval-rule]')!.textContent).toContain('plugin_rule:deploy:prod');
    dialog()!.querySelector<HTMLButtonElement>('[data-testid=approval-always]')!.click();
    await flush();
    expect(answerApproval).toHaveBeenLastCalledWith('a6', true, 'always');
    expect(dialog()).toBeNull();
  });

  it('an "always" the server cannot keep shows why and asks again, without always', async () => {
    answerApproval.mockImplementationOnce(async () => {
      throw Object.assign(new Error('always cannot be kept now; the approval still waits'), { code: 'invalid' });
    });
    listeners.get('approval:pending')!(approval('a7', true));
    dialog()!.querySelector<HTMLButtonElement>('[data-testid=approval-always]')!.click();
    await flush();
    await flush();
    expect(showMessage).toHaveBeenCalledWith('warn', 'The approval was not recorded', expect.stringContaining('still waits'));
    expect(dialog()).not.toBeNull();
    expect(dialog()!.querySelector('[data-testid=approval-always]')).toBeNull();
    dialog()!.querySelector<HTMLButtonElement>('[data-testid=approval-approve]')!.click();
    await flush();
    expect(answerApproval).toHaveBeenLastCalledWith('a7', true, 'once');
  });

  it('an approval decided elsewhere closes its dialog without answering; one dialog per approval', async () => {
    listeners.get('approval:pending')!(approval('a3'));
    listeners.get('approval:pending')!(approval('a3'));
    expect(document.querySelectorAll('[data-testid=approval]').length).toBe(1);
    listeners.get('approval:done')!({ id: 'a3', outcome: 'approved' });
    await flush();
    expect(dialog()).toBeNull();
    expect(answerApproval).not.toHaveBeenCalled();
  });

  it('argsText indents JSON and leaves anything else as it came', () => {
    expect(argsText('{"a":1}')).toBe('{\n  "a": 1\n}');
    expect(argsText('not json')).toBe('not json');
  });
});
