// @vitest-environment jsdom
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { SettingsDTO } from '../types';

const current = (over: Partial<SettingsDTO> = {}): SettingsDTO => ({
  hook_timeout_seconds: 30,
  retention_days: 90,
  archive_idle_days: 0,
  trash_days: 30,
  trash_automatic: true,
  auto_prune: false,
  approvals_mode: 'manual',
  approval_timeout_seconds: 0,
  profile: 'default',
  profiles: ['default'],
  ...over,
});

const get = vi.fn(async () => current());
const set = vi.fn(async (s: SettingsDTO) => current(s));
const standingApprovals = vi.fn(async () => ({ rules: [], path: '/home/config.yaml' }));

vi.mock('../api', () => ({
  api: { settings: { get, set, standingApprovals, revokeStandingApproval: vi.fn() } },
  toApiError: (e: unknown) => ({ code: 'invalid', message: e instanceof Error ? e.message : String(e) }),
}));
vi.mock('../ops', () => ({ showMessage: vi.fn() }));

const { SettingsView } = await import('./settings');

const flush = () => new Promise((r) => setTimeout(r, 0));
const q = <T extends HTMLElement>(v: { el: HTMLElement }, id: string) => v.el.querySelector<T>(`[data-testid=${id}]`)!;

async function shown(): Promise<InstanceType<typeof SettingsView>> {
  const v = new SettingsView();
  document.body.append(v.el);
  v.show();
  await flush();
  return v;
}

describe('settings: approvals', () => {
  beforeEach(() => {
    document.body.innerHTML = '';
    get.mockClear();
    set.mockClear();
  });

  it('shows the mode and the time to answer, and saves them', async () => {
    get.mockResolvedValueOnce(current({ approvals_mode: 'off', approval_timeout_seconds: 45 }));
    const v = await shown();
    const mode = q<HTMLSelectElement>(v, 'set-approvals-mode');
    expect([...mode.options].map((o) => o.value)).toEqual(['manual', 'off']);
    expect(mode.value).toBe('off');
    expect(q<HTMLInputElement>(v, 'set-approval_timeout_seconds').value).toBe('45');
    expect(q(v, 'settings-approvals').textContent).toContain('Applies at the next ask');
    mode.value = 'manual';
    q<HTMLInputElement>(v, 'set-approval_timeout_seconds').value = '60';
    q<HTMLButtonElement>(v, 'settings-save').click();
    await flush();
    expect(set).toHaveBeenCalledTimes(1);
    expect(set.mock.lastCall?.[0]).toMatchObject({ approvals_mode: 'manual', approval_timeout_seconds: 60, trash_automatic: null });
  });

  it('keeps smart when config.yaml has it, and says what it does here', async () => {
    get.mockResolvedValueOnce(current({ approvals_mode: 'smart' }));
    const v = await shown();
    const mode = q<HTMLSelectElement>(v, 'set-approvals-mode');
    expect(mode.value).toBe('smart');
    expect(mode.selectedOptions[0]?.textContent).toContain('asks');
  });

  it('refuses a time to answer out of range before asking the server', async () => {
    const v = await shown();
    const input = q<HTMLInputElement>(v, 'set-approval_timeout_seconds');
    input.value = '3601';
    q<HTMLButtonElement>(v, 'settings-save').click();
    await flush();
    expect(set).not.toHaveBeenCalled();
    expect(input.getAttribute('aria-invalid')).toBe('true');
    expect(v.el.querySelector('#set-approval_timeout_seconds-err')!.textContent).toBe('At most 3600.');
  });

  it("puts the server's word on the mode under the mode, not under the hook timeout", async () => {
    set.mockRejectedValueOnce(new Error('rewritten config does not load: approvals.mode must be manual, off or smart, not "x"'));
    const v = await shown();
    q<HTMLButtonElement>(v, 'settings-save').click();
    await flush();
    expect(v.el.querySelector('#set-approvals-mode-err')!.textContent).toContain('approvals.mode must be');
    expect(v.el.querySelector('#set-hook_timeout_seconds-err')!.textContent).toBe('');
    set.mockRejectedValueOnce(new Error('rewritten config does not load: approvals.timeout must be 0 to 3600 seconds'));
    q<HTMLButtonElement>(v, 'settings-save').click();
    await flush();
    expect(v.el.querySelector('#set-approval_timeout_seconds-err')!.textContent).toContain('approvals.timeout');
    expect(v.el.querySelector('#set-hook_timeout_seconds-err')!.textContent).toBe('');
  });
});
