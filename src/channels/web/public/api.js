// The page's link to the server: JSON calls with the bearer token, forms with files (and how far
// their upload got), the token prompt, and Server-Sent Event streams that reconnect by themselves.
import { $, show } from './dom.js';
import { clientKey } from './identity.js';

const TOKEN_KEY = 'chorus.token';

export class ApiError extends Error {
  constructor(status, code, message, data = null) {
    super(message);
    this.status = status;
    this.code = code;
    /** The whole JSON body: a refusal carries `ephemeral` (its text and when to retry). */
    this.data = data;
  }
}

let token = localStorage.getItem(TOKEN_KEY) || '';
let pendingPrompt = null;

export function currentToken() {
  return token;
}

function headers(extra = {}) {
  // Every call says which browser it comes from: the server tags this browser's messages with it.
  const out = { ...extra, 'x-chorus-client': clientKey() };
  if (token) out.authorization = 'Bearer ' + token;
  return out;
}

/** Call the API. A 401 asks for the token (once, shared by concurrent calls) and retries. */
export async function api(method, path, body) {
  for (;;) {
    let res;
    try {
      res = await fetch(path, {
        method,
        headers: headers(body === undefined ? {} : { 'content-type': 'application/json' }),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new ApiError(0, 'network', 'Cannot reach the Chorus server. Is it running?');
    }
    let data = null;
    try {
      data = await res.json();
    } catch {
      data = null;
    }
    if (res.status === 401) {
      await askForToken(token ? 'That token was not accepted. Check channels.web.auth_token and try again.' : '');
      continue;
    }
    if (!res.ok) {
      const e = data && data.error ? data.error : {};
      throw new ApiError(res.status, e.code || 'http_' + res.status, e.message || `${res.status} ${res.statusText}`, data);
    }
    return data;
  }
}

/**
 * Send a form (a message with files) with XMLHttpRequest, which, unlike fetch, reports how much
 * of a large upload has gone: `onProgress(sent, total)`. Answers and errors as `api` gives them;
 * a 401 asks for the token and sends the form again.
 */
export async function upload(path, form, onProgress = () => {}) {
  for (;;) {
    const { status, statusText, data } = await new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open('POST', path);
      for (const [k, v] of Object.entries(headers())) xhr.setRequestHeader(k, v);
      xhr.upload.onprogress = (ev) => {
        if (ev.lengthComputable) onProgress(ev.loaded, ev.total);
      };
      xhr.onload = () => {
        let body = null;
        try {
          body = JSON.parse(xhr.responseText);
        } catch {
          body = null;
        }
        resolve({ status: xhr.status, statusText: xhr.statusText, data: body });
      };
      xhr.onerror = () => reject(new ApiError(0, 'network', 'Cannot reach the Chorus server. Is it running?'));
      xhr.send(form);
    });
    if (status === 401) {
      await askForToken(token ? 'That token was not accepted. Check channels.web.auth_token and try again.' : '');
      continue;
    }
    if (status < 200 || status >= 300) {
      const e = data && data.error ? data.error : {};
      throw new ApiError(status, e.code || 'http_' + status, e.message || `${status} ${statusText}`, data);
    }
    return data;
  }
}

/**
 * Where the page loads a kept file from (with the token: an <img> cannot send headers), as the
 * file of message `entryId`: the server serves it under that message's name for it.
 */
export function fileUrl(id, entryId) {
  return withToken(`/api/files/${encodeURIComponent(id)}`, { m: entryId });
}

/** Show the token dialog until a token the server accepts is entered. */
export function askForToken(message) {
  if (pendingPrompt) return pendingPrompt;
  const dialog = $('#auth-dialog');
  const form = $('#auth-form');
  const input = $('#auth-token');
  const error = $('#auth-error');
  const setError = (text) => {
    error.textContent = text;
    show(error, Boolean(text));
  };
  setError(message);
  pendingPrompt = new Promise((resolve) => {
    const onSubmit = async (ev) => {
      ev.preventDefault();
      const candidate = input.value.trim();
      if (!candidate) {
        setError('Enter the token.');
        return;
      }
      let res;
      try {
        res = await fetch('/api/info', { headers: { authorization: 'Bearer ' + candidate } });
      } catch {
        setError('Cannot reach the server. Try again.');
        return;
      }
      if (res.status === 401) {
        setError('That token was not accepted. Check channels.web.auth_token and try again.');
        input.select();
        return;
      }
      token = candidate;
      localStorage.setItem(TOKEN_KEY, token);
      form.removeEventListener('submit', onSubmit);
      dialog.removeEventListener('cancel', onCancel);
      dialog.close();
      input.value = '';
      pendingPrompt = null;
      resolve();
    };
    const onCancel = (ev) => ev.preventDefault();
    form.addEventListener('submit', onSubmit);
    dialog.addEventListener('cancel', onCancel);
    if (!dialog.open) dialog.showModal();
    input.focus();
  });
  return pendingPrompt;
}

/**
 * An EventSource that stays connected: the browser's own reconnect resumes with Last-Event-ID;
 * when the browser gives up (server down, HTTP error) we reopen with backoff, asking `url()` for
 * a fresh URL (with `?after=` the last seq seen). `onState('live' | 'reconnecting')`.
 */
export class LiveStream {
  constructor(url, handlers, onState) {
    this.url = url;
    this.handlers = handlers;
    this.onState = onState;
    this.es = null;
    this.timer = null;
    this.attempt = 0;
    this.closed = false;
  }

  open() {
    this.closed = false;
    const es = new EventSource(this.url());
    this.es = es;
    es.onopen = () => {
      this.attempt = 0;
      this.onState('live');
    };
    es.onerror = () => {
      if (this.es !== es) return;
      this.onState('reconnecting');
      if (es.readyState === EventSource.CLOSED) {
        es.close();
        this.schedule();
      }
    };
    for (const [type, fn] of Object.entries(this.handlers)) {
      es.addEventListener(type, (ev) => {
        if (this.es !== es) return;
        let data;
        try {
          data = JSON.parse(ev.data);
        } catch {
          return;
        }
        fn(data);
      });
    }
  }

  schedule() {
    if (this.closed || this.timer) return;
    const delay = Math.min(10_000, 500 * 2 ** this.attempt++);
    this.timer = setTimeout(async () => {
      this.timer = null;
      if (this.closed) return;
      try {
        // Surfaces a 401 as the token prompt before the stream is retried.
        await api('GET', '/api/info');
      } catch {
        this.schedule();
        return;
      }
      if (!this.closed) this.open();
    }, delay);
  }

  close() {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.es) this.es.close();
    this.es = null;
  }
}

/** `path` with the token as a query parameter (EventSource cannot send headers). */
export function withToken(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) q.set(k, String(v));
  if (token) q.set('token', token);
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}
