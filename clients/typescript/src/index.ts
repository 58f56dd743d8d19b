/**
 * TypeScript client of image-server (spec section 1): builds resize URLs and uploads images.
 * Drop-in compatible with the original service's SDK: same method names, option names, JSON
 * upload body and `x-api-key` header.
 */

import { createHmac } from "node:crypto";

export type Format = "webp" | "jpeg" | "jpg" | "png" | "gif" | "avif" | "auto" | "best" | "blurhash";
export type Fit = "inside" | "cover" | "contain" | "fill" | "outside";

export interface ClientConfig {
  /** Base URL of the server, e.g. `http://127.0.0.1:3000` (a trailing slash is removed). */
  baseUrl: string;
  /** Key for uploads and admin calls, sent as `x-api-key`. */
  apiKey?: string;
  /** Request timeout in milliseconds (default 30000). */
  timeout?: number;
  /**
   * For a server started with URL_SIGNING_KEY: resize URLs get a `signature` parameter,
   * base64url (no padding) of HMAC-SHA256 over the image path and query from after
   * `/images/resize/`. Sign on your own servers only: the key must not reach browsers.
   */
  signingKey?: string;
}

export interface ResizeOptions {
  /** Target width in pixels. */
  width?: number;
  /** Target height in pixels. */
  height?: number;
  /**
   * Device pixel ratio, above 0 and at most 5 (`window.devicePixelRatio`): the server
   * multiplies width and height by it, so `{ width: 400, dpr: 2 }` is served 800 px wide.
   */
  dpr?: number;
  format?: Format;
  /**
   * 1..100, server default 80; `"auto"`: searched by the server to its perceptual target
   * (docs/image-service.md, "Automatic quality").
   */
  quality?: number | "auto";
  /** Clockwise degrees, 0..360. */
  rotate?: number;
  /** Mirror left to right. */
  flip?: boolean;
  /** Mirror top to bottom. */
  flop?: boolean;
  grayscale?: boolean;
  /** Gaussian sigma. */
  blur?: number;
  sharpen?: boolean;
  fit?: Fit;
  /** `centre`, a compass point (`north`...), `entropy` or `attention`. */
  position?: string;
  /** Hex colour for contain padding and rotation corners. */
  background?: string;
  /**
   * Allow upscaling. Unsigned URLs may enlarge at most MAX_UNSIGNED_ENLARGE (default 4) times a
   * side and grow past the source to at most MAX_UNSIGNED_OUTPUT_PIXELS (8 MP); more is a 400.
   * URLs signed with `signingKey` have the full range (image-server README "Deployment").
   */
  enlarge?: boolean;
  /**
   * A stored image (`image`) or one line of text (`text`, 1 to 200 characters, drawn by the
   * server in its bundled font) composited onto the output; not both.
   */
  watermark?: { image?: string; text?: string; position?: string; opacity?: number; scale?: number };
  /**
   * The source's version from `uploadImage` (`version`, sent as `v`): the URL then never shows
   * another picture, and the server answers it `immutable` for a year instead of a day.
   */
  version?: string;
  /** `false`: a still of an animated source (its first frame, or `frame`'s). */
  animated?: boolean;
  /** The frame (from 0) of an animated source a still result shows. */
  frame?: number;
  /** Keep the source's EXIF Copyright and Artist (and an sRGB ICC profile); otherwise no metadata. */
  keepCopyright?: boolean;
  /** Multiplies width and height, or without them the source's size (above 0, at most 5). */
  zoom?: number;
  /** The smallest result width: a smaller one is scaled up, its shape kept. */
  minWidth?: number;
  /** The smallest result height: a smaller one is scaled up, its shape kept. */
  minHeight?: number;
  /** Remove a uniform border first: `true` (threshold 10) or a threshold 0 to 255. */
  trim?: boolean | number;
  /** Pixels added around the result in `background`: one number, or `[top, right, bottom, left]`. */
  padding?: number | [number, number, number, number];
  /** Pixelate in blocks of this many pixels (2 to 256). */
  pixelate?: number;
  /** Byte budget: the quality is lowered, then the picture shrunk, until the result fits. */
  maxBytes?: number;
  /** Names of the server's presets (PRESETS_FILE), applied before the other options. */
  preset?: string | string[];
  /** With `format: "blurhash"`: BlurHash components across and down, 1 to 9 (default 4 and 3). */
  blurhash?: { x?: number; y?: number };
  /** A placeholder instead of the picture: `{lqip: "data:image/webp;base64,...", width, height}`. */
  lqip?: boolean;
  /** Pixel rectangle of the oriented source, applied before the resize. */
  crop?: { left?: number; top?: number; width: number; height: number };
}

export interface UploadOptions {
  /** Object path to store under, e.g. `pets/cat.jpg`. */
  path: string;
  /** Declared media type (the server sniffs the real one). */
  contentType: string;
}

export interface UploadResponse {
  success: boolean;
  /** The stored path, to pass to `getResizeUrl`. */
  path: string;
  /** `/images/resize/{path}`, absolute when the server has PUBLIC_BASE_URL. */
  url: string;
  contentType?: string;
  size?: number;
  /** The stored object's version, for the `version` resize option (16 hex digits). */
  version?: string;
}

/** An error answered by the server: `status` and its `{"error"}` message. */
export class ImageServerError extends Error {
  constructor(public readonly status: number, message: string) {
    super(message);
    this.name = "ImageServerError";
  }
}

export class ImageClient {
  private readonly baseUrl: string;
  private readonly apiKey?: string;
  private readonly timeout: number;
  private readonly signingKey?: string;

  /** `new ImageClient(baseUrl, apiKey)` or, like the original SDK, `new ImageClient({baseUrl, apiKey})`. */
  constructor(config: ClientConfig | string, apiKey?: string) {
    const c: ClientConfig = typeof config === "string" ? { baseUrl: config, apiKey } : config;
    this.baseUrl = c.baseUrl.replace(/\/+$/, "");
    this.apiKey = c.apiKey;
    this.timeout = c.timeout ?? 30000;
    this.signingKey = c.signingKey;
  }

  /** The URL of `path` transformed by `options` (path segments percent-encoded). */
  getResizeUrl(path: string, options: ResizeOptions = {}): string {
    const encoded = path.split("/").map(encodeURIComponent).join("/");
    const url = new URL(`${this.baseUrl}/images/resize/${encoded}`);
    const p = url.searchParams;
    const put = (k: string, v: unknown) => {
      if (v !== undefined && v !== null && v !== "") p.append(k, String(v));
    };
    put("width", options.width);
    put("height", options.height);
    put("dpr", options.dpr);
    put("format", options.format);
    put("quality", options.quality);
    put("rotate", options.rotate);
    put("flip", options.flip);
    put("flop", options.flop);
    put("grayscale", options.grayscale);
    put("blur", options.blur);
    put("sharpen", options.sharpen);
    put("fit", options.fit);
    put("position", options.position);
    put("background", options.background);
    put("enlarge", options.enlarge);
    if (options.watermark) {
      put("watermarkImage", options.watermark.image);
      put("watermarkText", options.watermark.text);
      put("watermarkPosition", options.watermark.position);
      put("watermarkOpacity", options.watermark.opacity);
      put("watermark_scale", options.watermark.scale);
    }
    if (options.crop) {
      put("cropLeft", options.crop.left);
      put("cropTop", options.crop.top);
      put("cropWidth", options.crop.width);
      put("cropHeight", options.crop.height);
    }
    put("animated", options.animated);
    put("frame", options.frame);
    put("keep_copyright", options.keepCopyright);
    put("zoom", options.zoom);
    put("min_width", options.minWidth);
    put("min_height", options.minHeight);
    put("trim", options.trim);
    put("padding", Array.isArray(options.padding) ? options.padding.join(",") : options.padding);
    put("pixelate", options.pixelate);
    put("max_bytes", options.maxBytes);
    put("preset", Array.isArray(options.preset) ? options.preset.join(",") : options.preset);
    put("blurhash_x", options.blurhash?.x);
    put("blurhash_y", options.blurhash?.y);
    put("lqip", options.lqip);
    put("v", options.version);
    if (this.signingKey) {
      const prefix = new URL(`${this.baseUrl}/images/resize/`).pathname.length;
      const message = url.pathname.slice(prefix) + url.search;
      p.append("signature", createHmac("sha256", this.signingKey).update(message).digest("base64url"));
    }
    return url.toString();
  }

  /**
   * Uploads an image (Buffer, Uint8Array, Blob, base64 string or data URL) as the original SDK
   * does: JSON `{image, path, contentType}` with `x-api-key`. Resolves to `{success, path, url}`.
   * Rejects with `ImageServerError` (401 bad key, 413 too large, 415 not an image, 400 bad path).
   */
  async uploadImage(file: Uint8Array | Blob | string, options: UploadOptions): Promise<UploadResponse> {
    let image: string;
    if (typeof file === "string") {
      image = file.startsWith("data:") ? file.slice(file.indexOf(",") + 1) : file;
    } else if (file instanceof Uint8Array) {
      image = Buffer.from(file).toString("base64");
    } else {
      image = Buffer.from(await file.arrayBuffer()).toString("base64");
    }
    const response = await fetch(`${this.baseUrl}/images/upload`, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        ...(this.apiKey ? { "x-api-key": this.apiKey } : {}),
      },
      body: JSON.stringify({ image, path: options.path, contentType: options.contentType }),
      signal: AbortSignal.timeout(this.timeout),
    });
    if (!response.ok) {
      let message = `upload failed with status ${response.status}`;
      try {
        const body = (await response.json()) as { error?: string };
        if (body.error) message = body.error;
      } catch {
        /* not JSON */
      }
      throw new ImageServerError(response.status, message);
    }
    return (await response.json()) as UploadResponse;
  }

  /** Fetches the transformed image as a Blob. */
  async getResizedImage(path: string, options: ResizeOptions = {}): Promise<Blob> {
    const response = await fetch(this.getResizeUrl(path, options), { signal: AbortSignal.timeout(this.timeout) });
    if (!response.ok) {
      const body = (await response.json().catch(() => ({}))) as { error?: string };
      throw new ImageServerError(response.status, body.error ?? `status ${response.status}`);
    }
    return response.blob();
  }
}

/** The original SDK's class name, for drop-in use. */
export { ImageClient as ResizeIt };
