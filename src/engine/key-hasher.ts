// Hashes a limiter key's subject and category into two independent 32-bit
// lanes (keyA chooses the set, keyB the tag, each mixed with the limit's
// salts by the table). Not cryptographic: the seed is random per table, so
// outsiders cannot aim keys at one set, and a collision costs at worst one
// shared limiter state.
import { fmix32, mix32 } from "./hash32";

/** `key:` and 64 hex digits: a managed key's SHA-256, as rate-limit.ts builds the subject. */
const KEY_SUBJECT_CHARS = 68;
/** `key:` and the first 16 hex digits (64 bits) of the digest. */
const KEY_SUBJECT_HASHED_CHARS = 20;

export class KeyHasher {
  /** The lanes of the key last passed to hash(). */
  keyA = 0;
  keyB = 0;
  readonly #seedA: number;
  readonly #seedB: number;
  // The two most recent subjects and categories with their hash lanes, most
  // recent first: one request charges a caller and its tenant (or address and
  // the anonymous aggregate), and the next request of a burst does the same.
  #subject0: string | null = null;
  #subject0Length = -1;
  #subject0A = 0;
  #subject0B = 0;
  #subject1: string | null = null;
  #subject1Length = -1;
  #subject1A = 0;
  #subject1B = 0;
  #category0: string | null = null;
  #category0A = 0;
  #category0B = 0;
  #category1: string | null = null;
  #category1A = 0;
  #category1B = 0;

  constructor(seed: number) {
    this.#seedA = fmix32(seed ^ 0x5bd1e995);
    this.#seedB = fmix32(Math.imul(seed, 0x27d4eb2f) ^ 0x165667b1);
  }

  /**
   * Hashes (subject, category) into keyA / keyB: two independent 32-bit lanes
   * per string, combined by XOR (each lane is seeded, so a difference in one
   * string cannot cancel one in the other). The two most recent subjects and
   * categories skip rehashing: hashing a 68-character `key:<sha256>` costs more
   * than the rest of a decision, and one caller's requests come in bursts.
   * Each remembered string is compared at most once, lengths first, since
   * comparing two different strings of equal length is a builtin call.
   */
  hash(subject: string, category: string): void {
    const length = subject.length;
    if (length === this.#subject0Length && subject === this.#subject0) {
      if (category === this.#category0) return; // a burst from one caller: nothing to do
    } else if (length === this.#subject1Length && subject === this.#subject1) {
      this.#subject1 = this.#subject0;
      this.#subject1Length = this.#subject0Length;
      this.#subject0 = subject;
      this.#subject0Length = length;
      const a = this.#subject0A;
      const b = this.#subject0B;
      this.#subject0A = this.#subject1A;
      this.#subject0B = this.#subject1B;
      this.#subject1A = a;
      this.#subject1B = b;
    } else {
      this.#subject1 = this.#subject0;
      this.#subject1Length = this.#subject0Length;
      this.#subject1A = this.#subject0A;
      this.#subject1B = this.#subject0B;
      this.#subject0 = subject;
      this.#subject0Length = length;
      this.#hashSubject(subject);
    }
    if (category !== this.#category0) this.#switchCategory(category);
    this.keyA = this.#subject0A ^ this.#category0A;
    this.keyB = this.#subject0B ^ this.#category0B;
  }

  #switchCategory(category: string): void {
    if (category === this.#category1) {
      this.#category1 = this.#category0;
      this.#category0 = category;
      const a = this.#category0A;
      const b = this.#category0B;
      this.#category0A = this.#category1A;
      this.#category0B = this.#category1B;
      this.#category1A = a;
      this.#category1B = b;
    } else {
      this.#category1 = this.#category0;
      this.#category1A = this.#category0A;
      this.#category1B = this.#category0B;
      this.#category0 = category;
      this.#hashCategory(category);
    }
  }

  #hashSubject(subject: string): void {
    const length = subject.length;
    // `key:<sha256 hex>`: the digest is uniform already, and 64 bits of it tell
    // keys apart far beyond the table's 32-bit tags, so 16 of its 64 hex
    // digits are read: one cache line of the string instead of two, a quarter
    // of the work. Nobody can pick a key whose digest starts like another's.
    const end = length === KEY_SUBJECT_CHARS && subject.charCodeAt(3) === 0x3a && subject.charCodeAt(0) === 0x6b && subject.charCodeAt(1) === 0x65 && subject.charCodeAt(2) === 0x79 ? KEY_SUBJECT_HASHED_CHARS : length;
    let a = this.#seedA;
    let b = this.#seedB ^ length;
    let i = 0;
    for (; i + 1 < end; i += 2) {
      const w = subject.charCodeAt(i) | (subject.charCodeAt(i + 1) << 16);
      a = Math.imul(a ^ w, 0xcc9e2d51);
      a = (a << 15) | (a >>> 17);
      b = Math.imul(b ^ w, 0x1b873593);
      b = (b << 13) | (b >>> 19);
    }
    if (i < end) {
      const w = subject.charCodeAt(i) | 0x10000;
      a = Math.imul(a ^ w, 0xcc9e2d51);
      b = Math.imul(b ^ w, 0x1b873593);
    }
    this.#subject0A = fmix32(a ^ length);
    this.#subject0B = fmix32(b ^ (length << 8));
  }

  #hashCategory(category: string): void {
    let a = this.#seedA ^ 0x2545f491;
    let b = this.#seedB ^ category.length;
    for (let i = 0; i < category.length; i++) {
      const c = category.charCodeAt(i);
      a = mix32(a, c);
      b = Math.imul(b ^ c, 0x01000193);
    }
    this.#category0A = fmix32(a ^ category.length);
    this.#category0B = fmix32(b);
  }
}
