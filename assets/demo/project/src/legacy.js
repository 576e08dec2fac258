"use strict";

// Old pricing helpers, kept for the 0.2 API. Nothing imports this any more.
function oldTotal(items) {
  return items.reduce((a, i) => a + i.price, 0);
}

module.exports = { oldTotal };
