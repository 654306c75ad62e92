/**
 * Secrets never leave the process in the text cribline writes about a request: its log line and
 * its problem answer pass through `maskSecrets`, whatever part of the request (a path, a query
 * parameter, a header) the text came from. An API key keeps its public id (`crib_AbCd1234…`);
 * a webhook secret keeps only its prefix (`whsec_…`).
 */

/**
 * `crib_` and more than a key id's 8 characters is a key or part of one; `whsec_` and anything
 * after it is a webhook secret (base64). Either prefix in any letter case: what follows it is
 * the secret, however the prefix was written. A query string reads an unencoded `+` as a
 * space, so a webhook secret goes on past spaces, its last character included (a word after
 * it may be masked too): only a character base64 never holds, such as a quote, ends it.
 */
const SECRET = /(crib_[0-9A-Za-z]{8})[0-9A-Za-z]+|(whsec_)[0-9A-Za-z+/= ]+/gi;

/** A percent-escape of an ASCII character: a raw URL may spell a key's letters that way. */
const ESCAPE = /^%[0-7][0-9A-Fa-f]$/;

/**
 * The text with every key's secret part and every webhook secret cut off and replaced by `…`.
 * Percent-escapes are read as the characters they stand for, so that a key spelled
 * `crib_AbCd%31...` in a raw URL is found too; the text is otherwise kept as it was.
 */
export function maskSecrets(text: string): string {
  // Both prefixes end in "_", written as such or escaped: most text has neither.
  if (!text.includes("_") && !/%5f/i.test(text)) return text;
  let plain = "";
  // rawAt[i]: where the i-th character of `plain` starts in `text`.
  const rawAt: number[] = [];
  for (let at = 0; at < text.length; ) {
    rawAt.push(at);
    const escape = text.slice(at, at + 3);
    if (ESCAPE.test(escape)) {
      plain += String.fromCharCode(Number.parseInt(escape.slice(1), 16));
      at += 3;
    } else {
      plain += text[at];
      at += 1;
    }
  }
  rawAt.push(text.length);
  let out = "";
  let from = 0;
  for (const match of plain.matchAll(SECRET)) {
    const shown = (match[1] ?? match[2] ?? "").length;
    out += `${text.slice(from, rawAt[match.index + shown])}…`;
    from = rawAt[match.index + match[0].length] ?? text.length;
  }
  return from === 0 ? text : out + text.slice(from);
}

/** True when the text carries a secret that `maskSecrets` would cut. */
export function carriesSecret(text: string): boolean {
  return maskSecrets(text) !== text;
}
