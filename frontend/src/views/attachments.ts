// Files in a chat's transcript, shown as files. A file a person sent on a
// chat platform reaches the model as the gateway's note before their words
// ("[The user sent an image: 'photo.jpg'. It is saved at: /…]"); a file the
// agent sent is a MEDIA:<path> tag in its reply. Both read as a line of
// machinery; here they are a row of attachments, the words below them, and
// what the model read one click away.

import { h } from '../dom';

export interface Attachment {
  kind: 'image' | 'voice' | 'audio' | 'video' | 'document' | 'file' | 'sticker';
  name: string;
  path: string; // where it is saved (a person's) or was read from (the agent's); '' when it was not saved
  note: string; // why it was not saved, or its duration
  seen?: string; // what the vision model saw in it, as the agent was told
}

const kinds: Record<string, Attachment['kind']> = {
  'an image': 'image',
  'an audio file': 'audio',
  'a video': 'video',
  'a text document': 'document',
  'a document': 'document',
  'a file': 'file',
};

// One note of the gateway's, at the start of what is left of the message.
const namedRE = /^\[The user sent (an image|an audio file|a video|a text document|a document|a file): '(.+?)'(?: \(([^)\n]*)\))?\. (.*?)\](?:\n\n|$)/s;
const voiceRE = /^\[The user sent a voice message: (.+?)(?: \(duration: (\d+:\d\d)\))?\](?:\n\n|$)/;
const savedRE = /(?:It is|The file is(?: also)?) saved at: (.+?)(?:\. |\.$|$)/;
// A photo the vision model looked at, and one it could not see.
const seenRE = /^\[The user sent an image~ Here's what I can see:\n([\s\S]*?)\]\n\[If you need a closer look, use vision_analyze with image_url: (.+?) ~\](?:\n\n|$)/;
const unseenRE = /^\[The user sent an image but I couldn't quite see it this time \(>_<\) You can try looking at it yourself with vision_analyze using image_url: (.+?)\](?:\n\n|$)/;

// A sticker (its emoji and set, what the vision model saw in it), and an
// animated one, which it cannot see.
const stickerRE = /^\[The user sent a sticker(?: (\S+?)(?: from "(.*?)")?)?~ It shows: "([\s\S]*?)" \(=\^\.w\.\^=\)\](?:\n\n|$)/;
const animatedRE = /^\[The user sent an animated sticker(?: (\S+?))?~ I can't see animated ones yet(?:, but the emoji suggests: \S+?)?\](?:\n\n|$)/;

// A voice message the gateway transcribed (its words are the person's),
// and one it could not.
const heardRE = /^\[The user sent a voice message~ Here's what they said: "([\s\S]*?)"\](?:\n\n|$)/;
const unheardRE = /^\[voice message could not be transcribed\](?:\n\n|$)/;

// savedName is a saved file's name as it was sent: without the time and
// random part the gateway put before it.
function savedName(path: string): string {
  return basename(path).replace(/^\d{8}-\d{6}-[0-9a-f]{8}-/, '');
}

/** sentFiles reads the gateway's notes at the start of a person's
 * message: the files, and the words after them (null when there is no
 * note). A text document's content stays in the words. */
export function sentFiles(content: string): { files: Attachment[]; text: string } | null {
  const files: Attachment[] = [];
  const heard: string[] = [];
  let rest = content;
  for (;;) {
    const said = heardRE.exec(rest);
    if (said) {
      files.push({ kind: 'voice', name: 'voice message', path: '', note: 'transcribed' });
      heard.push(said[1] ?? '');
      rest = rest.slice(said[0].length);
      continue;
    }
    const unheard = unheardRE.exec(rest);
    if (unheard) {
      files.push({ kind: 'voice', name: 'voice message', path: '', note: 'could not be transcribed' });
      rest = rest.slice(unheard[0].length);
      continue;
    }
    const v = voiceRE.exec(rest);
    if (v) {
      const path = v[1] ?? '';
      // The note names only the saved file.
      files.push({ kind: 'voice', name: savedName(path), path, note: v[2] ? v[2] : '' });
      rest = rest.slice(v[0].length);
      continue;
    }
    const seen = seenRE.exec(rest);
    if (seen) {
      const path = seen[2] ?? '';
      files.push({ kind: 'image', name: savedName(path), path, note: '', seen: (seen[1] ?? '').trim() });
      rest = rest.slice(seen[0].length);
      continue;
    }
    const sticker = stickerRE.exec(rest) ?? animatedRE.exec(rest);
    if (sticker) {
      const animated = sticker[0].startsWith('[The user sent an animated');
      const name = [sticker[1], animated ? '' : sticker[2]].filter(Boolean).join(' ') || 'sticker';
      files.push({ kind: 'sticker', name, path: '', note: animated ? 'animated' : '', ...(animated ? {} : { seen: sticker[3] ?? '' }) });
      rest = rest.slice(sticker[0].length);
      continue;
    }
    const unseen = unseenRE.exec(rest);
    if (unseen) {
      const path = unseen[1] ?? '';
      files.push({ kind: 'image', name: savedName(path), path, note: 'the vision model could not see it' });
      rest = rest.slice(unseen[0].length);
      continue;
    }
    const m = namedRE.exec(rest);
    if (!m) break;
    const tail = m[4] ?? '';
    const saved = savedRE.exec(tail);
    const problem = saved ? '' : tail.replace(/^It (?:was not saved|could not be (?:saved|fetched))(?::| from)\s*/, '').replace(/\.$/, '');
    files.push({ kind: kinds[m[1] ?? ''] ?? 'file', name: m[2] ?? '', path: saved?.[1] ?? '', note: saved ? '' : [m[3], problem].filter(Boolean).join(' · ') });
    rest = rest.slice(m[0].length);
  }
  // What a voice message said is the person's words, before any they typed.
  const text = [...heard, rest].filter(Boolean).join('\n\n');
  return files.length ? { files, text } : null;
}

const mediaRE = /[`"']?MEDIA:[ \t]*(?:`([^`\n]+)`|"([^"\n]+)"|'([^'\n]+)'|(\S+))/g;
const imageExt = /\.(png|jpe?g|gif|webp)$/i;
const videoExt = /\.(mp4|mov|avi|mkv|webm)$/i;
const audioExt = /\.(ogg|opus|mp3|wav|m4a|flac)$/i;

/** replyFiles reads the MEDIA:<path> tags of the agent's reply, as the
 * gateway sends them (not inside a fenced code block): the files, and the
 * words without the tags and the [[audio_as_voice]] / [[as_document]]
 * directives (null when there is no tag). */
export function replyFiles(content: string): { files: Attachment[]; text: string } | null {
  if (!content.includes('MEDIA:')) return null;
  const files: Attachment[] = [];
  const seen = new Set<string>();
  let fence = false;
  const lines = content.split('\n').map((line) => {
    if (line.trim().startsWith('```')) fence = !fence;
    if (fence || !line.includes('MEDIA:')) return line;
    return line.replace(mediaRE, (all, a?: string, b?: string, c?: string, bare?: string) => {
      const path = (a ?? b ?? c ?? bare ?? '').trim().replace(/[`"',.;:)}\]]+$/, '');
      if (!path) return all;
      if (!seen.has(path)) {
        seen.add(path);
        files.push({ kind: imageExt.test(path) ? 'image' : videoExt.test(path) ? 'video' : audioExt.test(path) ? 'audio' : 'document', name: basename(path), path, note: '' });
      }
      return '';
    });
  });
  if (!files.length) return null;
  const text = lines
    .join('\n')
    .replaceAll('[[audio_as_voice]]', '')
    .replaceAll('[[as_document]]', '')
    .replace(/[ \t]+$/gm, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { files, text };
}

function basename(path: string): string {
  const i = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'));
  return i >= 0 ? path.slice(i + 1) : path;
}

// kept says a file reached the agent: saved, or a sticker or voice message
// that the gateway turned into words (neither names a saved file).
function kept(f: Attachment): boolean {
  return f.path !== '' || f.kind === 'sticker' || f.kind === 'voice';
}

/** attachmentsView is a row of files: each its kind, its name, its
 * duration or why it was not saved; its path on hover. */
export function attachmentsView(files: Attachment[], sent: 'person' | 'agent'): HTMLElement {
  return h(
    'div',
    { class: 'attachments', 'data-testid': 'attachments' },
    ...files.map((f) =>
      h(
        'span',
        {
          class: `attachment${kept(f) ? '' : ' missing'}`,
          'data-testid': 'attachment',
          'data-kind': f.kind,
          title: [f.path ? `${sent === 'person' ? 'Saved at' : 'Sent from'} ${f.path}` : f.note, f.seen ? `What the vision model saw: ${f.seen}` : '']
            .filter(Boolean)
            .join('\n'),
        },
        h('span', { class: 'badge attachment-kind' }, f.kind), // words, not emoji: a system without an emoji font shows boxes
        h('span', { class: 'attachment-name' }, f.name),
        f.note ? h('span', { class: 'muted small' }, kept(f) ? f.note : `not saved: ${f.note}`) : null,
      ),
    ),
  );
}
