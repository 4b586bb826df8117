// Counts the fleet page's GPU cells that a 1,440 × 900 screen shows without scrolling.
// Prints one JSON line: {"visible": n, "cells": n, "smallest_px": n, "svg_top_px": n}.
// node tools/visible-gpus.js [path]; the server must be running (GPUSHARE_URL).
import { BASE_URL, launch, openPage, waitForHydration } from '../support/browser.js';

const [path = '/'] = process.argv.slice(2);
const browser = await launch();
try {
  const { context, page } = await openPage(browser);
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(BASE_URL + path);
  await waitForHydration(page);
  const result = await page.evaluate(() => {
    const rects = [...document.querySelectorAll('[data-testid="heatmap"] svg rect')];
    const boxes = rects.map((r) => r.getBoundingClientRect());
    const inside = boxes.filter(
      (b) => b.top >= 0 && b.left >= 0 && b.bottom <= window.innerHeight && b.right <= window.innerWidth,
    );
    const svg = document.querySelector('[data-testid="heatmap"] svg');
    return {
      visible: inside.length,
      cells: rects.length,
      smallest_px: Math.round(Math.min(...boxes.map((b) => Math.min(b.width, b.height))) * 10) / 10,
      svg_top_px: svg ? Math.round(svg.getBoundingClientRect().top) : null,
    };
  });
  console.log(JSON.stringify(result));
  await context.close();
} finally {
  await browser.close();
}
