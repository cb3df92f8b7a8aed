/**
 * An image's size in pixels from its header alone, and the limit on it (`limits.max_image_pixels`).
 *
 * A few kilobytes of PNG can say 30000×30000: whatever decodes it — a browser showing it, a
 * vision model's server — needs gigabytes for the pixels. Such a file is refused when it arrives
 * and never sent to a model; the size is read from the header (image-size), never by decoding.
 */
import { imageSize } from 'image-size';

/** Default of `limits.max_image_pixels`: 40 megapixels, more than any phone photo. */
export const DEFAULT_MAX_IMAGE_PIXELS = 40_000_000;

export interface PixelSize {
  width: number;
  height: number;
  /** EXIF Orientation, when the header has one (a JPEG's 5–8 are shown turned). */
  orientation?: number | undefined;
}

/** The size the image's header states, or null when it cannot be read. */
export function headerSize(bytes: Uint8Array): PixelSize | null {
  try {
    const size = imageSize(bytes);
    if (!size.width || !size.height) return null;
    return { width: size.width, height: size.height, orientation: size.orientation };
  } catch {
    return null;
  }
}

/** "900 MP", "40 MP", "2.5 MP"; below a hundredth of a megapixel, the pixels themselves. */
export function pixelsText(n: number): string {
  const mp = Number((n / 1e6).toFixed(2));
  return mp > 0 ? `${mp} MP` : `${n} pixels`;
}

/** "1,001,000 pixels". */
function exactly(n: number): string {
  return `${n.toLocaleString('en-US')} pixels`;
}

/**
 * Why an image of this size is over `max`, in words that read after its name
 * ("is 30000×30000 pixels (900 MP); the limit is 40 MP"), or null when it is within it.
 */
export function overPixelLimit(size: { width: number; height: number }, max: number): string | null {
  const pixels = size.width * size.height;
  if (pixels <= max) return null;
  let [has, limit] = [pixelsText(pixels), pixelsText(max)];
  // Just over a limit that is not a round number: megapixels would read the same.
  if (has === limit) [has, limit] = [exactly(pixels), exactly(max)];
  return `is ${size.width}\u00d7${size.height} pixels (${has}); the limit is ${limit}`;
}
