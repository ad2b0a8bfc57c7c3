// How the agent does things: the profile's skills, a folder each under
// skills/ (and those shared from skills.external_dirs) whose SKILL.md the
// model loads when a task matches it. Here a person sees which there are,
// reads one as the model reads it, takes one off (skills.disabled) or
// puts it back, and gives one the keys it needs (its
// required_environment_variables, kept in the profile's .env). Each change
// is saved at once.

import { api, toApiError } from '../api';
import { h, replace } from '../dom';
import { showMessage } from '../ops';
import type { EnvNeedDTO, SkillDTO, SkillsDTO } from '../api/gen/dto';
import { envNeedField } from './env-need';

export class SkillsSection {
  readonly el: HTMLElement;
  private readonly body: HTMLElement;

  constructor() {
    this.body = h('div', { class: 'skills-list-wrap' });
    this.el = h(
      'section',
      { class: 'standing skills', 'aria-labelledby': 'skills-title', 'data-testid': 'settings-skills' },
      h('h2', { id: 'skills-title' }, 'How the agent does things'),
      h(
        'p',
        { class: 'muted small' },
        'Skills: a folder each, whose SKILL.md says how to do one kind of task. A new conversation lists them for the model, which loads one when it matches the task; the agent writes them with its skill_manage tool, and /name in a conversation runs one. A skill taken off here is offered nowhere (skills.disabled); a key a skill needs is asked for here and kept in .env.',
      ),
      this.body,
    );
  }

  async load(): Promise<void> {
    try {
      this.render(await api.settings.skills());
    } catch (e) {
      replace(this.body, h('p', { class: 'form-error', role: 'alert' }, `Could not read them: ${toApiError(e).message}`));
    }
  }

  private render(d: SkillsDTO): void {
    const skills = d.skills ?? [];
    const head = h('p', { class: 'muted small' }, 'Kept in ', h('code', {}, d.dir), skills.length ? ` — ${skills.length} skill${skills.length === 1 ? '' : 's'}` : '');
    const parts: HTMLElement[] = [head];
    if (!skills.length) parts.push(h('p', { class: 'muted small', 'data-testid': 'skills-none' }, 'None yet. Copy the familiar agent’s ~/.hermes/skills here, or let the agent record a workflow that worked.'));
    if (skills.length) {
      const list = h('ul', { class: 'standing-list skills-list' });
      for (const s of skills) list.append(this.skill(s));
      parts.push(list);
    }
    for (const p of d.problems ?? []) parts.push(h('p', { class: 'form-error small', role: 'alert' }, p));
    replace(this.body, ...parts);
  }

  private skill(s: SkillDTO): HTMLElement {
    const offered = h('input', { type: 'checkbox', 'data-testid': 'skill-offered', 'aria-label': `Offer ${s.name}` });
    offered.checked = !s.disabled;
    offered.addEventListener('change', () => void this.offer(s.name, offered));
    const view = h('details', { class: 'skill-view' }, h('summary', { 'data-testid': 'skill-show' }, 'As the model reads it'));
    view.addEventListener('toggle', () => {
      if (view.open && !view.querySelector('pre')) void this.show(s.name, view);
    });
    const badges: HTMLElement[] = [];
    if (s.category) badges.push(h('span', { class: 'badge' }, s.category));
    if (s.external) badges.push(h('span', { class: 'badge', title: s.path }, 'shared'));
    const why = s.not_offered && !s.disabled ? h('div', { class: 'skill-why muted small' }, `Not offered: ${s.not_offered}`) : null;
    return h(
      'li',
      { class: 'skill', 'data-skill': s.name, 'data-testid': 'skill' },
      h(
        'div',
        { class: 'skill-main' },
        h('label', { class: 'skill-name', title: 'Offered to the model (unticked: skills.disabled in config.yaml)' }, offered, h('code', {}, `/${s.name}`), ...badges),
        h('div', { class: 'skill-desc small' }, s.description || '(no description)'),
        why,
        ...(s.needs ?? []).map((e) => this.need(s.name, e)),
        view,
      ),
    );
  }

  /** need asks for a variable the skill declares (required_environment_variables)
   * and nobody set: without it the skill's scripts cannot work. */
  private need(skill: string, e: EnvNeedDTO): HTMLElement {
    return envNeedField(`skill-${skill}`, e, 'skill-env', async (value) => {
      try {
        this.render(await api.settings.setSkillKey({ skill, name: e.name, value }));
        showMessage('ok', `${e.name} kept in .env`, `Conversations that load ${skill} from now on get it.`);
        return true;
      } catch (err) {
        showMessage('warn', `${e.name} was not saved`, toApiError(err).message);
        return false;
      }
    });
  }

  private async show(name: string, view: HTMLDetailsElement): Promise<void> {
    try {
      const v = await api.settings.skill({ name, file: '', offered: true });
      const files = Object.values(v.linked ?? {}).flat();
      view.append(h('pre', { class: 'tool-output skill-text', 'data-testid': 'skill-text' }, v.content));
      if (files.length) view.append(h('p', { class: 'muted small' }, `Files beside it: ${files.join(', ')}`));
    } catch (e) {
      view.append(h('p', { class: 'form-error small', role: 'alert' }, `Could not read it: ${toApiError(e).message}`));
    }
  }

  private async offer(name: string, box: HTMLInputElement): Promise<void> {
    box.disabled = true;
    try {
      this.render(await api.settings.offerSkill({ name, file: '', offered: box.checked }));
    } catch (e) {
      box.checked = !box.checked;
      box.disabled = false;
      showMessage('warn', 'It was not changed', toApiError(e).message);
    }
  }
}
