import { describe, expect, it } from "vitest";
import { hasValidCheck, mintApiKey, newKeyCheckSecret, parseApiKey } from "../../src/identity/api-key";
import { importHmacKey as importKeyCheckSecret, sha256Hex } from "../../src/utils/crypto";

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

describe("managed API keys", () => {
  it("mints tg_<id>_<secret> whose check passes, with its digest and a listing prefix", async () => {
    const checkKey = await importKeyCheckSecret(newKeyCheckSecret());
    const minted = await mintApiKey(checkKey);
    expect(minted.key).toMatch(/^tg_[0-9a-hjkmnp-tv-z]{12}_[0-9a-hjkmnp-tv-z]{32}$/);
    expect(parseApiKey(minted.key)).toEqual({ id: minted.id });
    expect(minted.digest).toBe(await sha256Hex(minted.key));
    expect(minted.key.startsWith(minted.prefix)).toBe(true);
    expect(await hasValidCheck(minted.key, checkKey)).toBe(true);
  });

  it("fails the check for any one character changed, and under another deployment's secret", async () => {
    const checkKey = await importKeyCheckSecret(newKeyCheckSecret());
    const other = await importKeyCheckSecret(newKeyCheckSecret());
    const { key } = await mintApiKey(checkKey);
    expect(await hasValidCheck(key, other)).toBe(false);
    // Every position of the id and secret, each replaced by another character.
    for (let i = 3; i < key.length; i++) {
      if (key[i] === "_") continue;
      const replacement = ALPHABET[(ALPHABET.indexOf(key[i]!) + 1) % 32]!;
      const changed = key.slice(0, i) + replacement + key.slice(i + 1);
      expect(await hasValidCheck(changed, checkKey), `position ${i}`).toBe(false);
    }
  });

  it("lets about one made-up key in 2^30 through: none of 2,000 random ones", async () => {
    const checkKey = await importKeyCheckSecret(newKeyCheckSecret());
    let passed = 0;
    for (let n = 0; n < 2000; n++) {
      const bytes = crypto.getRandomValues(new Uint8Array(44));
      const chars = [...bytes].map((b) => ALPHABET[b & 31]).join("");
      const key = `tg_${chars.slice(0, 12)}_${chars.slice(12)}`;
      if (await hasValidCheck(key, checkKey)) passed++;
    }
    expect(passed).toBe(0);
  });
});
