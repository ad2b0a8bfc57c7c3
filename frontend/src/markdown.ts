// Markdown in transcripts: markdown-it parses (raw HTML off, so a message
// can only ever be Markdown), DOMPurify sanitises what it renders, and the
// result is a fragment of nodes (no innerHTML on the page). Code blocks get
// a language label and a Copy button; links open outside the app.
//
// markdown-it and DOMPurify are three quarters of the web bundle: they load
// as a chunk of their own (loadMarkdown), after the first list is painted or
// when a transcript opens, so the window's launch does not parse them.

import type MarkdownIt from 'markdown-it';
import type { Config } from 'dompurify';
import { copyText, openURL } from './api';
import { markRanges, matchRanges, queryWords } from './highlight';

// Only web and mail links survive; javascript:, data: and the like are text.
const safeLink = /^(https?:|mailto:)/i;

const purifyConfig: Config & { RETURN_DOM_FRAGMENT: true } = {
  ALLOWED_TAGS: ['p', 'br', 'strong', 'em', 's', 'del', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li', 'a', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'img'],
  ALLOWED_ATTR: ['href', 'title', 'class', 'start', 'align', 'src', 'alt'],
  ALLOWED_URI_REGEXP: /^(https?:|mailto:)/i,
  RETURN_DOM_FRAGMENT: true,
};

interface Engine {
  md: InstanceType<typeof MarkdownIt>;
  sanitize: (html: string) => DocumentFragment;
}

let engine: Engine | null = null;
let loading: Promise<void> | null = null;

/** loadMarkdown loads the Markdown engine once; it never rejects (without
 * it, messages are shown as plain text). */
export function loadMarkdown(): Promise<void> {
  loading ??= Promise.all([import('markdown-it'), import('dompurify')]).then(
    ([mdMod, purifyMod]) => {
      const md = new mdMod.default({ html: false, linkify: true, breaks: true, typographer: false });
      md.validateLink = (url: string) => safeLink.test(url.trim());
      const purify = purifyMod.default;
      engine = { md, sanitize: (html) => purify.sanitize(html, purifyConfig) };
    },
    (err: unknown) => {
      console.warn('Markdown could not be loaded; messages are shown as plain text', err);
    },
  );
  return loading;
}

/** markdownReady says whether renderMarkdown renders Markdown yet. */
export function markdownReady(): boolean {
  return engine !== null;
}

/** renderMarkdown turns a message's text into sanitised DOM nodes. */
export function renderMarkdown(text: string): DocumentFragment {
  if (!engine) {
    // not loaded (yet): the text as it is
    const frag = document.createDocumentFragment();
    const p = document.createElement('p');
    p.className = 'plain-text';
    p.textContent = text;
    frag.append(p);
    return frag;
  }
  const frag = engine.sanitize(engine.md.render(text));
  for (const img of Array.from(frag.querySelectorAll('img'))) {
    // no remote fetches from a transcript: an image is shown as its link
    const a = document.createElement('a');
    a.href = img.getAttribute('src') ?? '';
    a.textContent = img.getAttribute('alt') || a.href;
    img.replaceWith(a);
  }
  for (const a of Array.from(frag.querySelectorAll('a'))) {
    a.setAttribute('rel', 'noopener noreferrer');
    a.setAttribute('target', '_blank');
  }
  for (const pre of Array.from(frag.querySelectorAll('pre'))) decorateCode(pre);
  return frag;
}

function decorateCode(pre: HTMLPreElement): void {
  const code = pre.querySelector('code');
  const lang = /(?:^|\s)language-([\w+#.-]+)/.exec(code?.className ?? '')?.[1] ?? '';
  const label = document.createElement('span');
  label.className = 'code-lang';
  label.textContent = lang;
  const btn = document.createElement('button');
  btn.type = 'button';
  btn.className = 'btn small plain code-copy';
  btn.dataset.testid = 'copy-code';
  btn.textContent = 'Copy';
  btn.title = 'Copy this code';
  btn.addEventListener('click', () => {
    void copyText(code?.textContent ?? pre.textContent ?? '').then((ok) => {
      btn.textContent = ok ? 'Copied' : 'Copy failed';
      window.setTimeout(() => (btn.textContent = 'Copy'), 1500);
    });
  });
  const bar = document.createElement('div');
  bar.className = 'code-bar';
  bar.append(label, btn);
  const wrap = document.createElement('div');
  wrap.className = 'code-block';
  pre.replaceWith(wrap);
  wrap.append(bar, pre);
}

/** onLinkClick opens a transcript's links outside the app (the window's
 * default browser), never in the app's own page. */
export function onLinkClick(ev: MouseEvent): void {
  const a = ev.target instanceof Element ? ev.target.closest('a[href]') : null;
  if (!a || a.classList.contains('chain')) return;
  const href = a.getAttribute('href') ?? '';
  if (!safeLink.test(href)) return;
  ev.preventDefault();
  openURL(href);
}

/** markWords wraps every occurrence of the query's words in root's text in
 * <mark>; it returns the first mark, to scroll to. */
export function markWords(root: Node, query: string): HTMLElement | null {
  const words = queryWords(query);
  if (words.length === 0) return null;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const texts: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement?.closest('button, .code-bar')) continue;
    texts.push(n as Text);
  }
  let first: HTMLElement | null = null;
  for (const t of texts) {
    const ranges = matchRanges(t.data, words);
    if (ranges.length === 0) continue;
    const parts = markRanges(t.data, ranges);
    first ??= parts.find((n): n is HTMLElement => n instanceof HTMLElement) ?? null;
    t.replaceWith(...parts);
  }
  return first;
}
