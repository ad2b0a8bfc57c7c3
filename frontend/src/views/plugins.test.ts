// @vitest-environment jsdom
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { PluginDTO } from '../types';
import type { PluginEnvRequest } from '../api/gen/dto';

const plugin = (over: Partial<PluginDTO> = {}): PluginDTO => ({
  name: 'needy',
  runtime: 'python',
  source: 'user',
  enabled: true,
  state: 'running',
  warnings: [],
  hooks: [],
  commands: [],
  registered: true,
  missing_env: [{ name: 'ACME_TOKEN', description: 'the Acme token', url: 'https://acme.example/keys', secret: true }],
  ...over,
});

const list = vi.fn(async () => [plugin()]);
const setEnv = vi.fn(async (_name: string, _req: PluginEnvRequest) => plugin({ missing_env: [] }));
const openURL = vi.fn();

vi.mock('../api', () => ({
  api: { plugins: { list, setEnv, shellHooks: vi.fn(async () => ({ hooks: [], warnings: [] })) } },
  isDesktop: () => false,
  on: vi.fn(),
  openURL,
  copyText: vi.fn(),
  toApiError: (e: unknown) => ({ code: 'invalid', message: e instanceof Error ? e.message : String(e) }),
}));
vi.mock('../modal', () => ({ confirmModal: vi.fn() }));

const { PluginsView } = await import('./plugins');

const flush = () => new Promise((r) => setTimeout(r, 0));

describe('plugins: what a plugin requires and nobody set', () => {
  beforeEach(() => {
    document.body.innerHTML = '';
    setEnv.mockClear();
  });

  it('asks for it on the row, keeps it unseen, and the row stops asking', async () => {
    const v = new PluginsView();
    document.body.append(v.el);
    v.show();
    await flush();
    const need = v.el.querySelector<HTMLElement>('[data-testid=plugin-env][data-env=ACME_TOKEN]')!;
    expect(need.textContent).toContain('Needs ACME_TOKEN — the Acme token (where to get it)');
    const input = need.querySelector<HTMLInputElement>('[data-testid=plugin-env-value]')!;
    expect(input.type).toBe('password');
    // The manifest's link opens outside the app.
    need.querySelector('a')!.dispatchEvent(new MouseEvent('click', { bubbles: true, cancelable: true }));
    expect(openURL).toHaveBeenCalledWith('https://acme.example/keys');
    // Nothing typed: nothing sent.
    need.querySelector<HTMLButtonElement>('[data-testid=plugin-env-save]')!.click();
    await flush();
    expect(setEnv).not.toHaveBeenCalled();
    input.value = 'tok-secret-1';
    need.querySelector<HTMLButtonElement>('[data-testid=plugin-env-save]')!.click();
    await flush();
    expect(setEnv).toHaveBeenCalledWith('needy', { name: 'ACME_TOKEN', value: 'tok-secret-1' });
    expect(v.el.querySelector('[data-testid=plugin-env]')).toBeNull();
    expect(v.el.textContent).toContain('ACME_TOKEN kept in .env. needy gets it when it starts again');
    expect(document.body.innerHTML).not.toContain('tok-secret-1');
  });

  it('shows a link that is not a web address as text', async () => {
    list.mockResolvedValueOnce([plugin({ missing_env: [{ name: 'X_TOKEN', url: 'javascript:alert(1)', secret: false }] })]);
    const v = new PluginsView();
    document.body.append(v.el);
    v.show();
    await flush();
    const need = v.el.querySelector<HTMLElement>('[data-testid=plugin-env]')!;
    expect(need.querySelector('a')).toBeNull();
    expect(need.textContent).toContain('javascript:alert(1)');
  });
});
