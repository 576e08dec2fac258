"use strict";

const { formatCents } = require("./format");

class Cart {
  constructor() {
    this.items = [];
  }

  add(product, quantity = 1) {
    this.items.push({ product, quantity });
  }

  remove(sku) {
    this.items = this.items.filter((item) => item.product.sku !== sku);
  }

  // total returns the cart's total in cents.
  total() {
    let sum = 0;
    for (const item of this.items) {
      sum += item.product.price;
    }
    return sum;
  }

  summary() {
    return `${this.items.length} item(s), ${formatCents(this.total())}`;
  }
}

module.exports = { Cart };
