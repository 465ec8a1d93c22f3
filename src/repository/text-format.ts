/**
 * A reader of the protobuf text format (the language of Triton's `config.pbtxt`), as the
 * protobuf text-format spec defines it for what a model configuration uses: `#` comments, fields
 * with or without `:` before a message, `{ }` or `< >` around messages, repeated fields written
 * again or as a `[ ... ]` list, `,` or `;` after any field, enum names as bare identifiers, numbers
 * (decimal, hex, octal, floats, `inf`, `nan`) and strings in either quote with C escapes, adjacent
 * strings joined. No npm package reads the text format (protobufjs and @bufbuild/protobuf read
 * binary and JSON only), so the grammar lives here. It reads without a schema: what each field
 * means is checked afterwards, where its position is still known.
 */

/** Where something is in a file: 1-based line and column. */
export interface TextPosition {
  readonly line: number;
  readonly column: number;
}

/** One value: a scalar as written (its kind says how), or a nested message. */
export type TextValue =
  | { readonly kind: 'string'; readonly value: string; readonly at: TextPosition }
  | { readonly kind: 'number'; readonly value: number; readonly text: string; readonly at: TextPosition }
  | { readonly kind: 'identifier'; readonly value: string; readonly at: TextPosition }
  | { readonly kind: 'message'; readonly fields: readonly TextField[]; readonly at: TextPosition };

/** One field as written; a repeated field appears once per value, `listed` when it came in `[ ... ]`. */
export interface TextField {
  readonly name: string;
  readonly value: TextValue;
  readonly at: TextPosition;
  readonly listed: boolean;
}

/**
 * A config file that cannot be read, with the file, line and column of the mistake in its
 * message (`models/a/config.pbtxt:3:7: expected ...`) and as properties.
 *
 * @example
 * ```ts
 * try { parseTextFormat('max_batch_size 8', 'config.pbtxt'); } catch (e) { (e as ConfigSyntaxError).line; } // 1
 * ```
 */
export class ConfigSyntaxError extends Error {
  /** The file, as given to the parser. */
  readonly file: string;
  /** 1-based line of the mistake. */
  readonly line: number;
  /** 1-based column of the mistake. */
  readonly column: number;

  constructor(file: string, at: TextPosition, message: string) {
    super(`${file}:${at.line}:${at.column}: ${message}`);
    this.name = 'ConfigSyntaxError';
    this.file = file;
    this.line = at.line;
    this.column = at.column;
  }
}

type Token =
  | { readonly type: 'punct'; readonly text: string; readonly at: TextPosition }
  | { readonly type: 'identifier'; readonly text: string; readonly at: TextPosition }
  | { readonly type: 'number'; readonly text: string; readonly at: TextPosition }
  | { readonly type: 'string'; readonly text: string; readonly value: string; readonly at: TextPosition }
  | { readonly type: 'end'; readonly text: ''; readonly at: TextPosition };

const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/y;
// Signs are tokens of their own ("- 5" is legal); this matches what follows one.
const NUMBER = /(?:0[xX][0-9A-Fa-f]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fF]?)/y;
const SIMPLE_ESCAPES: Readonly<Record<string, string>> = { n: '\n', t: '\t', r: '\r', a: '\x07', b: '\b', f: '\f', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?' };

/** Splits the text into tokens, each with its position; a character no token starts with is refused where it stands. */
function tokenize(text: string, file: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  let lineStart = 0;
  const here = (at = i): TextPosition => ({ line, column: at - lineStart + 1 });
  while (i < text.length) {
    const c = text[i] as string;
    if (c === '\n') {
      i++;
      line++;
      lineStart = i;
    } else if (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v') {
      i++;
    } else if (c === '#') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if ('{}<>[]:,;-'.includes(c)) {
      tokens.push({ type: 'punct', text: c, at: here() });
      i++;
    } else if (c === '"' || c === "'") {
      const at = here();
      const start = i;
      const value = readString(text, i + 1, c, file, (j) => here(j));
      i = value.end;
      tokens.push({ type: 'string', text: text.slice(start, i), value: value.text, at });
    } else {
      IDENTIFIER.lastIndex = i;
      NUMBER.lastIndex = i;
      const word = IDENTIFIER.exec(text);
      const number = word === null ? NUMBER.exec(text) : null;
      const match = word ?? number;
      if (match === null) throw new ConfigSyntaxError(file, here(), `unexpected character ${JSON.stringify(c)}`);
      // "1abc" is neither a number nor an identifier.
      const after = text[i + match[0].length];
      if (number !== null && after !== undefined && /[A-Za-z0-9_.]/.test(after)) throw new ConfigSyntaxError(file, here(), `malformed number ${JSON.stringify(text.slice(i, i + match[0].length + 1))}`);
      tokens.push({ type: word !== null ? 'identifier' : 'number', text: match[0], at: here() });
      i += match[0].length;
    }
  }
  tokens.push({ type: 'end', text: '', at: here() });
  return tokens;
}

/** The body of a string from `i` (just after the opening quote) to its closing `quote`, escapes decoded. */
function readString(text: string, i: number, quote: string, file: string, at: (index: number) => TextPosition): { text: string; end: number } {
  let out = '';
  while (i < text.length) {
    const c = text[i] as string;
    if (c === quote) return { text: out, end: i + 1 };
    if (c === '\n') break;
    if (c !== '\\') {
      out += c;
      i++;
      continue;
    }
    const e = text[i + 1] ?? '';
    if (e in SIMPLE_ESCAPES) {
      out += SIMPLE_ESCAPES[e];
      i += 2;
    } else if (/[0-7]/.test(e)) {
      const digits = /^[0-7]{1,3}/.exec(text.slice(i + 1, i + 4))?.[0] as string;
      out += String.fromCharCode(parseInt(digits, 8));
      i += 1 + digits.length;
    } else if (e === 'x' || e === 'X') {
      const digits = /^[0-9A-Fa-f]{1,2}/.exec(text.slice(i + 2, i + 4))?.[0];
      if (digits === undefined) throw new ConfigSyntaxError(file, at(i), 'expected hex digits after \\x');
      out += String.fromCharCode(parseInt(digits, 16));
      i += 2 + digits.length;
    } else if (e === 'u' || e === 'U') {
      const n = e === 'u' ? 4 : 8;
      const digits = text.slice(i + 2, i + 2 + n);
      if (!new RegExp(`^[0-9A-Fa-f]{${n}}$`).test(digits) || parseInt(digits, 16) > 0x10ffff) throw new ConfigSyntaxError(file, at(i), `expected ${n} hex digits of a code point after \\${e}`);
      out += String.fromCodePoint(parseInt(digits, 16));
      i += 2 + n;
    } else {
      throw new ConfigSyntaxError(file, at(i), `unknown escape ${JSON.stringify(`\\${e}`)} in a string`);
    }
  }
  throw new ConfigSyntaxError(file, at(i), `unterminated string: expected a closing ${quote} before the end of the line`);
}

/** A number token's value (hex, octal, decimal or float; `inf`, `nan` come as identifiers). */
function numberValue(text: string, negative: boolean): number {
  let value: number;
  if (/^0[xX]/.test(text)) value = parseInt(text.slice(2), 16);
  else if (/^0[0-7]+$/.test(text)) value = parseInt(text, 8);
  else value = Number(text.replace(/[fF]$/, ''));
  return negative ? -value : value;
}

const CLOSE: Readonly<Record<string, string>> = { '{': '}', '<': '>' };

/** The recursive-descent reader over the tokens. */
class Reader {
  #i = 0;
  constructor(
    private readonly tokens: readonly Token[],
    private readonly file: string,
  ) {}

  get #token(): Token {
    return this.tokens[this.#i] as Token;
  }

  #fail(token: Token, expected: string): never {
    const got = token.type === 'end' ? 'the end of the file' : JSON.stringify(token.text);
    throw new ConfigSyntaxError(this.file, token.at, `expected ${expected}, got ${got}`);
  }

  #is(text: string): boolean {
    const t = this.#token;
    return t.type === 'punct' && t.text === text;
  }

  #take(text: string, expected = JSON.stringify(text)): Token {
    if (!this.#is(text)) this.#fail(this.#token, expected);
    return this.tokens[this.#i++] as Token;
  }

  /** Fields until `close` (a `}` or `>`), or the end of the file at the top. */
  fields(close: string | undefined, opened?: TextPosition): TextField[] {
    const out: TextField[] = [];
    for (;;) {
      const t = this.#token;
      if (close === undefined ? t.type === 'end' : this.#is(close)) return out;
      if (t.type !== 'identifier') {
        this.#fail(t, close === undefined || opened === undefined ? 'a field name' : `a field name or ${JSON.stringify(close)} to close the message opened at line ${opened.line}, column ${opened.column}`);
      }
      this.#i++;
      const colon = this.#is(':');
      if (colon) this.#i++;
      if (this.#is('[')) {
        const open = this.#take('[');
        if (this.#is(']')) {
          this.#i++;
        } else {
          for (;;) {
            out.push({ name: t.text, value: this.#value(t.text, true), at: t.at, listed: true });
            if (this.#is(']')) break;
            this.#take(',', `"," or "]" to close the list opened at line ${open.at.line}`);
          }
          this.#i++;
        }
      } else {
        out.push({ name: t.text, value: colon ? this.#value(t.text, true) : this.#message(t.text), at: t.at, listed: false });
      }
      if (this.#is(',') || this.#is(';')) this.#i++;
    }
  }

  /** A message in `{ }` or `< >`. */
  #message(field: string): TextValue {
    const t = this.#token;
    const close = t.type === 'punct' ? CLOSE[t.text] : undefined;
    if (close === undefined) this.#fail(t, `":" or "{" after field ${JSON.stringify(field)}`);
    this.#i++;
    const fields = this.fields(close, t.at);
    this.#i++;
    return { kind: 'message', fields, at: t.at };
  }

  /** A scalar, or (`message` allowed) a message. */
  #value(field: string, message: boolean): TextValue {
    const t = this.#token;
    if (message && t.type === 'punct' && CLOSE[t.text] !== undefined) return this.#message(field);
    if (t.type === 'string') {
      let value = '';
      while (this.#token.type === 'string') value += (this.tokens[this.#i++] as Extract<Token, { type: 'string' }>).value;
      return { kind: 'string', value, at: t.at };
    }
    const negative = this.#is('-');
    if (negative) this.#i++;
    const n = this.#token;
    if (n.type === 'number') {
      this.#i++;
      return { kind: 'number', value: numberValue(n.text, negative), text: `${negative ? '-' : ''}${n.text}`, at: t.at };
    }
    if (n.type === 'identifier') {
      this.#i++;
      const lower = n.text.toLowerCase();
      if (lower === 'inf' || lower === 'infinity') return { kind: 'number', value: negative ? -Infinity : Infinity, text: `${negative ? '-' : ''}${n.text}`, at: t.at };
      if (lower === 'nan') return { kind: 'number', value: NaN, text: n.text, at: t.at };
      if (negative) this.#fail(n, 'a number after "-"');
      return { kind: 'identifier', value: n.text, at: t.at };
    }
    return this.#fail(n, `a value for field ${JSON.stringify(field)} (a number, a string, a name${message ? ' or a message in { }' : ''})`);
  }
}

/**
 * Reads a protobuf text-format document into its fields, in order, each with its position. Throws
 * a {@link ConfigSyntaxError} naming `file`, the line and the column of the first mistake.
 *
 * @param text - the document.
 * @param file - the name to report in errors (the config's path).
 * @example
 * ```ts
 * const fields = parseTextFormat('max_batch_size: 8\ndynamic_batching { }', 'config.pbtxt');
 * fields.map((f) => f.name); // ['max_batch_size', 'dynamic_batching']
 * ```
 */
export function parseTextFormat(text: string, file: string): TextField[] {
  return new Reader(tokenize(text, file), file).fields(undefined);
}
