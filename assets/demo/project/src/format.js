"use strict";

function formatCents(cents) {
  return "$" + cents / 100;
}

module.exports = { formatCents };
