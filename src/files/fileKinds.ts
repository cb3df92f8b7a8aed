/**
 * What a refused file is, in words people know: "a Windows executable (exe)", "a ZIP archive
 * (zip)". `file-type` names what it recognises only by extension and MIME type; the common ones
 * get a description here, the rest one made from their MIME type.
 */

const KINDS: Record<string, string> = {
  exe: 'a Windows executable',
  msi: 'a Windows installer',
  elf: 'a Linux executable',
  macho: 'a macOS executable',
  class: 'a Java class file',
  wasm: 'a WebAssembly module',
  apk: 'an Android app',
  zip: 'a ZIP archive',
  rar: 'a RAR archive',
  '7z': 'a 7-Zip archive',
  gz: 'a gzip archive',
  bz2: 'a bzip2 archive',
  xz: 'an xz archive',
  zst: 'a Zstandard archive',
  tar: 'a tar archive',
  cfb: 'an old Microsoft Office document',
  docx: 'a Word document',
  xlsx: 'an Excel spreadsheet',
  pptx: 'a PowerPoint presentation',
  odt: 'an OpenDocument text',
  ods: 'an OpenDocument spreadsheet',
  odp: 'an OpenDocument presentation',
  epub: 'an e-book',
  sqlite: 'an SQLite database',
  heic: 'a HEIC photo',
  avif: 'an AVIF image',
  tif: 'a TIFF image',
  bmp: 'a BMP image',
  ico: 'an icon',
  psd: 'a Photoshop document',
  jxl: 'a JPEG XL image',
  mp4: 'an MP4 video',
  mov: 'a QuickTime video',
  webm: 'a WebM video',
  mkv: 'a Matroska video',
  avi: 'an AVI video',
  mp3: 'an MP3 audio file',
  m4a: 'an M4A audio file',
  wav: 'a WAV audio file',
  ogg: 'an Ogg audio file',
  flac: 'a FLAC audio file',
  ttf: 'a font',
  otf: 'a font',
  woff: 'a web font',
  woff2: 'a web font',
};

/** "a Windows executable (exe)": what `file-type` found, for a refusal. */
export function describeKind(found: { ext: string; mime: string }): string {
  const known = KINDS[found.ext];
  if (known) return `${known} (${found.ext})`;
  const [family] = found.mime.split('/');
  if (family === 'image') return `an image of a kind Chorus does not take (${found.ext})`;
  if (family === 'video') return `a video (${found.ext})`;
  if (family === 'audio') return `an audio file (${found.ext})`;
  return `a file of type ${found.mime} (${found.ext})`;
}
