// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { attachmentsView, replyFiles, sentFiles } from './attachments';

describe('sentFiles', () => {
  it('reads the gateway notes before a person’s words', () => {
    const note =
      "[The user sent an image: 'Ada's photo.jpg'. It is saved at: /h/cache/gateway/telegram/1-Ada's photo.jpg. Look at it with your tools if you need to see it.]\n\n" +
      '[The user sent a voice message: /h/cache/gateway/telegram/2-voice-7.ogg (duration: 0:07)]\n\n' +
      "[The user sent a video: 'clip.mp4'. The file is saved at: /h/v/clip.mp4.]\n\n" +
      "[The user sent a file: 'big.iso' (45.0 MB). It was not saved: the gateway takes files up to 20.0 MB.]\n\n" +
      'what are these?';
    expect(sentFiles(note)).toEqual({
      files: [
        { kind: 'image', name: "Ada's photo.jpg", path: "/h/cache/gateway/telegram/1-Ada's photo.jpg", note: '' },
        { kind: 'voice', name: '2-voice-7.ogg', path: '/h/cache/gateway/telegram/2-voice-7.ogg', note: '0:07' },
        { kind: 'video', name: 'clip.mp4', path: '/h/v/clip.mp4', note: '' },
        { kind: 'file', name: 'big.iso', path: '', note: '45.0 MB · the gateway takes files up to 20.0 MB' },
      ],
      text: 'what are these?',
    });
  });

  it('keeps a text document’s content in the words, and needs no words', () => {
    const doc = "[The user sent a text document: 'n.txt'. Its content has been included below. The file is also saved at: /h/n.txt]\n\nline one";
    expect(sentFiles(doc)).toEqual({ files: [{ kind: 'document', name: 'n.txt', path: '/h/n.txt', note: '' }], text: 'line one' });
    const pdf =
      "[The user sent a document: 'p.pdf'. It is saved at: /h/p.pdf. Its text is not inlined here (it's a binary format such as PDF or DOCX). To read it, extract the document's text yourself with your tools before answering, instead of asking the user to paste the contents.]";
    expect(sentFiles(pdf)).toEqual({ files: [{ kind: 'document', name: 'p.pdf', path: '/h/p.pdf', note: '' }], text: '' });
    expect(sentFiles("[The user sent a file: 'a.pdf'. It could not be saved: telegram getFile: 400 Bad Request.]")?.files[0]?.note).toBe(
      'telegram getFile: 400 Bad Request',
    );
  });

  it('names a voice message as it was sent, not as it was saved', () => {
    expect(sentFiles('[The user sent a voice message: /h/telegram/20261207-142510-1c2d3e4f-voice-4420.ogg (duration: 0:07)]')?.files[0]?.name).toBe('voice-4420.ogg');
  });

  it('reads a photo the vision model looked at, or could not see', () => {
    const seen =
      "[The user sent an image~ Here's what I can see:\nA red [square] on white.\nNo text.]\n[If you need a closer look, use vision_analyze with image_url: /h/telegram/20261207-142510-1c2d3e4f-cat.jpg ~]\n\n" +
      "[The user sent an image but I couldn't quite see it this time (>_<) You can try looking at it yourself with vision_analyze using image_url: /h/telegram/20261207-142511-0a0b0c0d-dog.png]\n\n" +
      'which is cuter?';
    expect(sentFiles(seen)).toEqual({
      files: [
        { kind: 'image', name: 'cat.jpg', path: '/h/telegram/20261207-142510-1c2d3e4f-cat.jpg', note: '', seen: 'A red [square] on white.\nNo text.' },
        { kind: 'image', name: 'dog.png', path: '/h/telegram/20261207-142511-0a0b0c0d-dog.png', note: 'the vision model could not see it' },
      ],
      text: 'which is cuter?',
    });
    const chip = attachmentsView(sentFiles(seen)?.files ?? [], 'person').querySelector('[data-testid="attachment"]');
    expect(chip?.getAttribute('title')).toBe('Saved at /h/telegram/20261207-142510-1c2d3e4f-cat.jpg\nWhat the vision model saw: A red [square] on white.\nNo text.');
  });

  it('reads a sticker, what the vision model saw in it, and an animated one', () => {
    const notes =
      '[The user sent a sticker 😀 from "Cats"~ It shows: "A cat waving" (=^.w.^=)]\n\n' +
      '[The user sent a sticker~ It shows: "a sticker" (=^.w.^=)]\n\n' +
      "[The user sent an animated sticker 🎉~ I can't see animated ones yet, but the emoji suggests: 🎉]";
    expect(sentFiles(notes)).toEqual({
      files: [
        { kind: 'sticker', name: '😀 Cats', path: '', note: '', seen: 'A cat waving' },
        { kind: 'sticker', name: 'sticker', path: '', note: '', seen: 'a sticker' },
        { kind: 'sticker', name: '🎉', path: '', note: 'animated' },
      ],
      text: '',
    });
    const chips = attachmentsView(sentFiles(notes)?.files ?? [], 'person').querySelectorAll('[data-testid="attachment"]');
    expect([...chips].map((c) => [c.className, c.getAttribute('title'), c.textContent])).toEqual([
      ['attachment', 'What the vision model saw: A cat waving', 'sticker😀 Cats'],
      ['attachment', 'What the vision model saw: a sticker', 'stickersticker'],
      ['attachment', 'animated', 'sticker🎉animated'],
    ]);
  });

  it('reads a transcribed voice message as the person’s words, and one that could not be', () => {
    const said = '[The user sent a voice message~ Here\'s what they said: "Book the "blue" room for Friday."]\n\nand lunch too';
    expect(sentFiles(said)).toEqual({
      files: [{ kind: 'voice', name: 'voice message', path: '', note: 'transcribed' }],
      text: 'Book the "blue" room for Friday.\n\nand lunch too',
    });
    const chip = attachmentsView(sentFiles(said)?.files ?? [], 'person').querySelector('[data-testid="attachment"]');
    expect([chip?.className, chip?.textContent]).toEqual(['attachment', 'voicevoice messagetranscribed']);
    expect(sentFiles('[voice message could not be transcribed]')).toEqual({
      files: [{ kind: 'voice', name: 'voice message', path: '', note: 'could not be transcribed' }],
      text: '',
    });
  });

  it('leaves a message without a note alone', () => {
    expect(sentFiles('hello [The user sent an image: x]')).toBeNull();
    expect(sentFiles('[The user sent nothing]')).toBeNull();
  });
});

describe('replyFiles', () => {
  it('reads the MEDIA tags of a reply as the gateway sends them', () => {
    const reply = 'Here is the chart.\n\n[[audio_as_voice]]\nMEDIA:/tmp/chart.png\nMEDIA: "/tmp/my report.pdf", and MEDIA:`/tmp/n.ogg`\nMEDIA:/tmp/chart.png';
    expect(replyFiles(reply)).toEqual({
      files: [
        { kind: 'image', name: 'chart.png', path: '/tmp/chart.png', note: '' },
        { kind: 'document', name: 'my report.pdf', path: '/tmp/my report.pdf', note: '' },
        { kind: 'audio', name: 'n.ogg', path: '/tmp/n.ogg', note: '' },
      ],
      text: 'Here is the chart.\n\n, and',
    });
  });

  it('leaves a tag in a code block, and a reply without one', () => {
    expect(replyFiles('Write:\n```\nMEDIA:/tmp/a.png\n```')).toBeNull();
    expect(replyFiles('no files')).toBeNull();
  });
});

describe('attachmentsView', () => {
  it('shows each file, its path on hover, why one was not saved', () => {
    const el = attachmentsView(
      [
        { kind: 'image', name: 'a.png', path: '/h/a.png', note: '' },
        { kind: 'file', name: 'b.iso', path: '', note: 'too large' },
      ],
      'person',
    );
    const chips = el.querySelectorAll('[data-testid="attachment"]');
    expect(chips.length).toBe(2);
    expect(chips[0]?.getAttribute('title')).toBe('Saved at /h/a.png');
    expect(chips[1]?.classList.contains('missing')).toBe(true);
    expect(chips[1]?.textContent).toContain('not saved: too large');
  });
});
