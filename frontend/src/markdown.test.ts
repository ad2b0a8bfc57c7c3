// @vitest-environment jsdom
import { beforeAll, describe, expect, it } from 'vitest';
import { loadMarkdown, markdownReady, markWords, renderMarkdown } from './markdown';

function html(text: string): string {
  const div = document.createElement('div');
  div.append(renderMarkdown(text));
  return div.innerHTML;
}

describe('renderMarkdown before the engine has loaded', () => {
  it('shows the text as it is, never as HTML', () => {
    expect(markdownReady()).toBe(false);
    const div = document.createElement('div');
    div.append(renderMarkdown('**bold** <img src=x onerror=alert(1)>'));
    expect(div.querySelectorAll('img, strong')).toHaveLength(0);
    expect(div.textContent).toBe('**bold** <img src=x onerror=alert(1)>');
  });
});

describe('renderMarkdown', () => {
  beforeAll(async () => {
    await loadMarkdown();
    expect(markdownReady()).toBe(true);
  });

  it('renders Markdown', () => {
    const out = html('# Title\n\nSome **bold** and `code`.\n\n- one\n- two');
    expect(out).toContain('<h1>Title</h1>');
    expect(out).toContain('<strong>bold</strong>');
    expect(out).toContain('<code>code</code>');
    expect(out).toContain('<li>one</li>');
  });

  it('never lets HTML or script through', () => {
    const div = document.createElement('div');
    div.append(renderMarkdown('<script>alert(1)</script><img src=x onerror=alert(2)> [x](javascript:alert(3)) <b onclick="x()">b</b>'));
    expect(div.querySelectorAll('script, img, b, [onerror], [onclick]')).toHaveLength(0);
    expect(div.querySelectorAll('a')).toHaveLength(0);
    expect(div.textContent).toContain('<script>alert(1)</script>'); // shown as text
  });

  it('gives a code block its language and a Copy button', () => {
    const out = html('```go\nfmt.Println("hi")\n```');
    expect(out).toContain('class="code-block"');
    expect(out).toContain('<span class="code-lang">go</span>');
    expect(out).toContain('data-testid="copy-code"');
    expect(out).toContain('<pre><code class="language-go">fmt.Println("hi")');
  });

  it('opens links outside and shows images as links', () => {
    const out = html('see https://example.org and ![diagram](https://example.org/a.png)');
    expect(out).toContain('<a href="https://example.org" rel="noopener noreferrer" target="_blank">https://example.org</a>');
    expect(out).not.toContain('<img');
    expect(out).toContain('>diagram</a>');
  });
});

describe('markWords', () => {
  it('marks every word of the query, case-insensitively, and returns the first', () => {
    const div = document.createElement('div');
    div.append(renderMarkdown('The **Staging** endpoint is staging-2'));
    const first = markWords(div, 'staging endpoint');
    expect(first?.textContent).toBe('Staging');
    expect(Array.from(div.querySelectorAll('mark'), (m) => m.textContent)).toEqual(['Staging', 'endpoint', 'staging']);
  });

  it('marks nothing for an empty query', () => {
    const div = document.createElement('div');
    div.textContent = 'text';
    expect(markWords(div, '   ')).toBeNull();
    expect(div.querySelector('mark')).toBeNull();
  });
});
