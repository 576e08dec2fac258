"use strict";

const assert = require("assert");
const { Cart } = require("../src/cart");

const cart = new Cart();
cart.add({ sku: "tea", price: 350 }, 2);
cart.add({ sku: "cup", price: 1200 });
assert.strictEqual(cart.total(), 1900);
assert.strictEqual(cart.summary(), "2 item(s), $19.00");
console.log("ok");
