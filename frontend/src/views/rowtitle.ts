// The title cell of a list row: the title (with a search's marks), what the
// row stands for (a chain "continued from 3 parts", "branched from …", a
// subagent), the subagents toggle, and a hit's snippet.

import { clear, h, replace } from '../dom';
import { plural } from '../format';
import { highlight, markRanges } from '../highlight';
import type { Row } from '../stores/sessions';

/** titleCell makes the cell's parts once per pooled row. */
export function titleCell(): HTMLElement {
  return h(
    'span',
    { class: 'c-title' },
    h(
      'span',
      { class: 'line' },
      h('button', { type: 'button', class: 'sub-toggle', 'data-testid': 'sub-toggle', tabindex: '-1', hidden: true }),
      h('span', { class: 'title' }),
      h('span', { class: 'conv-note' }),
    ),
    h('span', { class: 'snippet' }),
  );
}

function parts(cell: HTMLElement): HTMLElement[] {
  const [line, snippet] = Array.from(cell.children) as HTMLElement[];
  return [...(Array.from(line!.children) as HTMLElement[]), snippet!];
}

export function clearTitleCell(cell: HTMLElement): void {
  const [toggle, title, note, snippet] = parts(cell);
  toggle!.hidden = true;
  title!.textContent = 'Loading…';
  title!.classList.remove('untitled');
  note!.textContent = '';
  snippet!.textContent = '';
  cell.classList.remove('nested');
}

/** renderTitleCell fills the cell for row r; expanded: its subagents show;
 * query: the search being shown; flat: subagents are rows of their own. */
export function renderTitleCell(cell: HTMLElement, r: Row, o: { expanded: boolean; query: string; flat: boolean }): void {
  const [toggle, title, note, snippet] = parts(cell);
  const x = r.session;
  const c = r.conv;
  cell.classList.toggle('nested', r.depth > 0);
  title!.classList.toggle('untitled', !x.title);
  if (o.query && x.title) replace(title!, ...(r.titleRanges?.length ? markRanges(x.title, rangePairs(r.titleRanges)) : highlight(x.title, o.query)));
  else title!.textContent = x.title || '(untitled)';
  title!.title = x.title ? `${x.title}\n${x.id}` : x.id;
  // what the row stands for
  const notes: string[] = [];
  if (c && c.parts > 1) notes.push(`continued from ${plural(c.parts - 1, 'earlier part')}`);
  if (x.relation === 'branch') notes.push(c?.origin_title ? `branched from “${c.origin_title}”` : 'branched');
  else if (x.relation === 'delegate' && (r.depth === 0 || o.query)) notes.push(c?.origin_title ? `subagent of “${c.origin_title}”` : 'subagent');
  note!.textContent = notes.length ? ` · ${notes.join(' · ')}` : '';
  note!.dataset.parts = String(c?.parts ?? 1);
  // subagents, collapsed with a count
  const kids = c && r.depth === 0 && !o.flat && !o.query ? c.subagents : 0;
  toggle!.hidden = kids === 0;
  if (kids > 0) {
    toggle!.textContent = `${o.expanded ? '▾' : '▸'} ${plural(kids, 'subagent')}`;
    toggle!.setAttribute('aria-expanded', String(o.expanded));
    toggle!.title = o.expanded ? 'Hide the subagents (←)' : 'Show the subagents (→)';
  }
  if (o.query && r.snippet && r.snippet !== x.title) {
    replace(snippet!, ...(r.snippetRanges?.length ? markRanges(r.snippet, rangePairs(r.snippetRanges)) : highlight(r.snippet, o.query)));
  } else clear(snippet!);
}

function rangePairs(rs: { start: number; end: number }[]): [number, number][] {
  return rs.map((x) => [x.start, x.end]);
}
