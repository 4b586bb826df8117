// Holding a page to the API's answer from the same snapshot of the fleet.
//
// The console reads the fleet again every few seconds, and the demo's elastic capacity launches
// and retires instances in between, so a page and an API answer read one after the other may come
// from two snapshots. Each page part that shows the fleet names its snapshot (`data-taken-at`),
// and each answer its own (`taken_at`): a page is compared with the answer of its snapshot.
import assert from 'node:assert/strict';

export const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Reads the page (`readPage`) and then the API (`readApi`) until the answer of the page's snapshot
// (`pageAt(shown)` equal to `apiAt(answer)`; the answer read just before counts too) is one
// `matches(shown, answer)` accepts, and returns what `matches` returned. Between two tries,
// `between(answer)` lets the page move on (a hydrated page follows live updates by itself; one
// without JavaScript is loaded again) and returns the answer read just before it, if any. Fails
// after `seconds` with `describe(shown, before, after)`: what it saw last.
export async function untilOneSnapshot({ readPage, readApi, pageAt, apiAt, matches, between, describe, seconds = 20 }) {
  const deadline = Date.now() + seconds * 1000;
  let before = null;
  for (;;) {
    const shown = await readPage();
    const after = await readApi();
    const answer = [before, after].find((a) => a != null && apiAt(a) === pageAt(shown));
    const found = answer === undefined ? null : matches(shown, answer);
    if (found) return found;
    if (Date.now() > deadline) assert.fail(describe(shown, before, after));
    before = await between(after);
  }
}

// `between` for a hydrated page that follows live updates: a quarter of a second, and the answer
// just read counts as the one before.
export const waitAWhile = async (answer) => {
  await pause(250);
  return answer;
};
