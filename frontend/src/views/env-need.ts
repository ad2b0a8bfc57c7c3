// envNeedField asks for a variable something requires and nobody set (a
// plugin's requires_env, a skill's required_environment_variables), as the
// familiar agent asks for it: typed unseen, kept in the profile's .env by
// save, never shown back. A save that fails leaves the field to try again.

import { button, h } from '../dom';
import { onLinkClick } from '../markdown';
import type { EnvNeedDTO } from '../api/gen/dto';

export function envNeedField(owner: string, e: EnvNeedDTO, testid: string, save: (value: string) => Promise<boolean>): HTMLElement {
  const id = `env-${owner}-${e.name}`.replace(/[^A-Za-z0-9_-]/g, '-');
  const input = h('input', { id, type: 'password', autocomplete: 'off', spellcheck: 'false', placeholder: 'Paste the value', 'data-testid': `${testid}-value`, 'aria-describedby': `${id}-help` });
  const saveBtn = button('Save', { class: 'btn small', 'data-testid': `${testid}-save` }, () => void submit());
  const submit = async (): Promise<void> => {
    const value = input.value;
    if (value.trim() === '') {
      input.focus();
      return;
    }
    input.disabled = saveBtn.disabled = true;
    if (!(await save(value))) input.disabled = saveBtn.disabled = false;
  };
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') {
      ev.preventDefault();
      void submit();
    }
  });
  const need = h(
    'div',
    { class: 'env-need small', 'data-testid': testid, 'data-env': e.name },
    h('label', { for: id }, 'Needs ', h('code', {}, e.name)),
    h(
      'span',
      { class: 'muted', id: `${id}-help` },
      e.description ? ` — ${e.description}` : '',
      e.url ? ' (' : '',
      e.url && /^https?:\/\//i.test(e.url) ? h('a', { href: e.url, target: '_blank', rel: 'noopener noreferrer' }, 'where to get it') : e.url,
      e.url ? ')' : '',
    ),
    h('div', { class: 'key-row' }, input, saveBtn),
  );
  need.addEventListener('click', onLinkClick); // the link opens outside the app
  return need;
}
