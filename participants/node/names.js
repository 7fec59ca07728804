'use strict';
/* Names and ids: the rules of saga names, topics and step names (protocol.md), and UUIDv7 message ids. */
const crypto = require('crypto');

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/; // saga names and topics, as Java's

/**
 * The rules of step names (protocol.md, "Step names in the log"): 1-200 printable characters, unique in the saga, and
 * never imitating the names logged for rollbacks, child-failure handlers and finally parts.
 */
function checkStepName(saga, step, seen) {
  if (typeof step !== 'string' || step.trim() === '' || step.length > 200 || /[\u0000-\u001f\u007f-\u009f]/.test(step)
      || /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(step)) {
    throw new Error(`Invalid step name '${step}' in saga '${saga}': use 1 to 200 printable characters (no control `
      + 'characters, no unpaired UTF-16 surrogates)');
  }
  if (step.startsWith('Rollback of ') || MARKS.some((mark) => step.endsWith(mark))) {
    throw new Error(`Step name '${step}' in saga '${saga}' imitates the names Coop logs for rollbacks, child-failure `
      + 'handlers and finally parts; choose another');
  }
  if (seen.has(step)) throw new Error(`Saga '${saga}' already has a step named '${step}'`);
  seen.add(step);
}

const MARKS = [' (rolling back child scopes)', ' (child failure handler)', ' (finally)'];

/** A UUIDv7: 48 bits of Unix milliseconds, version and variant bits, random bits. */
function uuidV7() {
  const b = crypto.randomBytes(16);
  b.writeUIntBE(Date.now(), 0, 6);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

module.exports = { NAME, checkStepName, uuidV7 };
