// A form's labelled fields, as Settings lays them out: the control, its help
// line and its error line, tied together for screen readers.

import { h } from '../dom';

/** described is the attributes that tie a control to its help and error lines. */
export function described(id: string): Record<string, string> {
  return { id, 'aria-describedby': `${id}-help ${id}-err`, 'data-testid': id };
}

/** errorLine is the (empty) error line of the control id. */
export function errorLine(id: string): HTMLElement {
  return h('div', { class: 'field-error', id: `${id}-err`, role: 'alert' });
}

/** fieldRow is a labelled control with its help and its error line. */
export function fieldRow(id: string, label: string, control: HTMLElement, help: string, err: HTMLElement): HTMLElement {
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, h('div', { class: 'help muted small', id: `${id}-help` }, help), err);
}
