// @vitest-environment jsdom
import { beforeEach, describe, expect, it, vi } from 'vitest';

const listeners = new Map<string, (d: unknown) => void>();
const answerClarify = vi.fn(async () => []);
const pendingClarify = vi.fn(async () => [] as unknown[]);

vi.mock('./api', () => ({
  api: { sessions: { answerClarify, pendingClarify } },
  on: (name: string, fn: (d: unknown) => void) => {
    listeners.set(name, fn);
    return () => listeners.delete(name);
  },
  toApiError: (e: unknown) => ({ code: (e as { code?: string }).code ?? 'internal', message: String(e) }),
}));

const showMessage = vi.fn();
vi.mock('./ops', () => ({ showMessage }));

const { installClarify } = await import('./clarify');

const question = (id: string, more: Record<string, unknown> = {}) => ({
  id,
  session_id: 's1',
  question: 'Which target?',
  choices: ['staging (Recommended)', 'prod'],
  multi_select: false,
  title: '',
  index: 1,
  of: 1,
  expires_at: null,
  ...more,
});

const dialog = () => document.querySelector<HTMLElement>('[data-testid=clarify]');
const el = <T extends HTMLElement>(testid: string) => dialog()!.querySelector<T>(`[data-testid=${testid}]`)!;
const choices = () => [...dialog()!.querySelectorAll<HTMLInputElement>('[data-testid=clarify-choice]')];
const type = (text: string) => {
  const other = el<HTMLInputElement>('clarify-other');
  other.value = text;
  other.dispatchEvent(new Event('input', { bubbles: true }));
};
const pending = (q: unknown) => listeners.get('clarify:pending')!(q);
const flush = () => new Promise((r) => setTimeout(r, 0));

describe('clarify', () => {
  beforeEach(() => {
    document.body.innerHTML = '';
    listeners.clear();
    answerClarify.mockClear();
    showMessage.mockClear();
    installClarify();
  });

  it('shows the question and its choices, the recommended one chosen and focused; Send answers the choice as shown', async () => {
    pending(question('c1'));
    expect(el('clarify-question').textContent).toBe('Which target?');
    expect(dialog()!.querySelector('h2')!.textContent).toBe('The agent asks');
    expect(dialog()!.querySelector('[data-testid=clarify-progress]')).toBeNull();
    expect(choices().map((c) => [c.type, c.value, c.checked])).toEqual([
      ['radio', 'staging (Recommended)', true],
      ['radio', 'prod', false],
    ]);
    expect(dialog()!.textContent).toContain('staging (Recommended)');
    expect(document.activeElement).toBe(choices()[0]);
    el<HTMLButtonElement>('clarify-send').click();
    await flush();
    expect(answerClarify).toHaveBeenCalledWith('c1', { response: 'staging (Recommended)' });
    expect(dialog()).toBeNull();
  });

  it('another choice, then Enter, answers it', async () => {
    pending(question('c2'));
    choices()[1]!.click();
    choices()[1]!.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    await flush();
    expect(answerClarify).toHaveBeenCalledWith('c2', { response: 'prod' });
  });

  it('words typed in Other pick Other and are the answer', async () => {
    pending(question('c3'));
    type('  staging, then prod  ');
    expect(el<HTMLInputElement>('clarify-other-pick').checked).toBe(true);
    expect(choices().some((c) => c.checked)).toBe(false);
    el<HTMLButtonElement>('clarify-send').click();
    await flush();
    expect(answerClarify).toHaveBeenCalledWith('c3', { response: 'staging, then prod' });
  });

  it('a multi-select question has checkboxes; the picks go in choices, the words typed in response', async () => {
    pending(question('c4', { question: 'Which regions?', choices: ['eu (Recommended)', 'us', 'asia'], multi_select: true }));
    expect(choices().map((c) => [c.type, c.checked])).toEqual([
      ['checkbox', true],
      ['checkbox', false],
      ['checkbox', false],
    ]);
    expect(dialog()!.querySelector('[role=group]')).not.toBeNull();
    choices()[2]!.click();
    type('africa');
    expect(el<HTMLInputElement>('clarify-other-pick').checked).toBe(true);
    el<HTMLButtonElement>('clarify-send').click();
    await flush();
    expect(answerClarify).toHaveBeenCalledWith('c4', { choices: ['eu (Recommended)', 'asia'], response: 'africa' });
  });

  it('an open question has only the words; Send waits for them', async () => {
    pending(question('c5', { question: 'What should the release be called?', choices: null }));
    expect(choices()).toEqual([]);
    expect(dialog()!.querySelector('[data-testid=clarify-other-pick]')).toBeNull();
    const other = el<HTMLInputElement>('clarify-other');
    expect(document.activeElement).toBe(other);
    expect(el<HTMLButtonElement>('clarify-send').disabled).toBe(true);
    other.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    await flush();
    expect(answerClarify).not.toHaveBeenCalled();
    type('Aurora');
    expect(el<HTMLButtonElement>('clarify-send').disabled).toBe(false);
    other.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    await flush();
    expect(answerClarify).toHaveBeenCalledWith('c5', { response: 'Aurora' });
  });

  it('Skip, and Escape with nothing typed, skip: an empty answer', async () => {
    pending(question('c6'));
    el<HTMLButtonElement>('clarify-skip').click();
    await flush();
    expect(answerClarify).toHaveBeenLastCalledWith('c6', { response: '', choices: [] });
    pending(question('c7'));
    dialog()!.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    await flush();
    expect(answerClarify).toHaveBeenLastCalledWith('c7', { response: '', choices: [] });
    expect(dialog()).toBeNull();
  });

  it('Escape keeps words typed: the dialog stays and says so; Skip drops them', async () => {
    pending(question('c8'));
    type('prod, but only after 18:00');
    expect(el('clarify-kept').hidden).toBe(true);
    dialog()!.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    await flush();
    expect(dialog()).not.toBeNull();
    expect(answerClarify).not.toHaveBeenCalled();
    expect(el('clarify-kept').hidden).toBe(false);
    expect(document.activeElement).toBe(el('clarify-other'));
    el<HTMLButtonElement>('clarify-skip').click();
    await flush();
    expect(answerClarify).toHaveBeenCalledWith('c8', { response: '', choices: [] });
  });

  it('a question of a batch shows its title and place; a time limit shows', () => {
    pending(question('c9', { title: 'Setup', index: 2, of: 3, question: 'Which database?', expires_at: '2026-12-05T12:00:00Z' }));
    expect(dialog()!.querySelector('h2')!.textContent).toBe('Setup');
    expect(el('clarify-progress').textContent).toBe('Question 2 of 3');
    expect(el('clarify-question').textContent).toBe('Which database?');
    expect(dialog()!.textContent).toContain('Without an answer by');
  });

  it('a question answered elsewhere closes its dialog without answering; one dialog per question', async () => {
    pending(question('c10'));
    pending(question('c10'));
    expect(document.querySelectorAll('[data-testid=clarify]').length).toBe(1);
    listeners.get('clarify:done')!({ id: 'c10', outcome: 'answered' });
    await flush();
    expect(dialog()).toBeNull();
    expect(answerClarify).not.toHaveBeenCalled();
  });

  it('the questions waiting when the page opens are asked', async () => {
    pendingClarify.mockImplementationOnce(async () => [question('c11')]);
    installClarify();
    await flush();
    expect(dialog()!.getAttribute('data-testid')).toBe('clarify');
    expect(dialog()!.querySelector('[data-id=c11]')).not.toBeNull();
  });

  it('an answer that came too late closes with why; any other failure asks again as it was left', async () => {
    answerClarify.mockImplementationOnce(async () => {
      throw Object.assign(new Error('no question c12 is waiting (answered already, or it ran out of time)'), { code: 'not_found' });
    });
    pending(question('c12'));
    el<HTMLButtonElement>('clarify-send').click();
    await flush();
    await flush();
    expect(showMessage).toHaveBeenCalledWith('warn', 'The answer was not recorded', expect.stringContaining('ran out of time'));
    expect(dialog()).toBeNull();

    answerClarify.mockImplementationOnce(async () => {
      throw Object.assign(new Error('Network error: Failed to fetch'), { code: 'network' });
    });
    pending(question('c13'));
    choices()[1]!.click();
    type('after lunch');
    choices()[1]!.click();
    el<HTMLButtonElement>('clarify-send').click();
    await flush();
    await flush();
    expect(showMessage).toHaveBeenLastCalledWith('warn', 'The answer was not recorded', expect.stringContaining('Network error'));
    expect(dialog()).not.toBeNull();
    expect(choices().map((c) => c.checked)).toEqual([false, true]);
    expect(el<HTMLInputElement>('clarify-other').value).toBe('after lunch');
    el<HTMLButtonElement>('clarify-send').click();
    await flush();
    expect(answerClarify).toHaveBeenLastCalledWith('c13', { response: 'prod' });
  });
});
