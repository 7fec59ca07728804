'use strict';
/* Failure documents (protocol.md, "The failure document"): the shape every reader of the log sees. */

const TYPE = {
  childRolledBack: 'dev.coop.failure.ChildRolledBackException',
  childRollbackFailed: 'dev.coop.failure.ChildRollbackFailedException',
  parentSaidSo: 'dev.coop.failure.ParentSaidSoException',
  gaveUp: 'dev.coop.failure.GaveUpException',
};

/** A failure document (protocol.md, "The failure document"). */
function failure(message, type, source, causes, stackTrace = []) {
  return { message, type, source, stackTrace, causes };
}

/** A JavaScript error as a failure document: its name as type, V8's stack as frames, err.cause as a cause. */
function failureOf(err, source, depth = 0) {
  const frames = String(err.stack || '').split('\n')
    .map((line) => /^\s+at (?:async )?(?:(.+?) \()?(.+?):(\d+):\d+\)?$/.exec(line))
    .filter(Boolean)
    .map(([, name, file, line]) => {
      const fn = name && name.replace(/ \[as [^\]]+\]$/, ''); // V8 adds the alias a method was called by
      const dot = fn ? fn.lastIndexOf('.') : -1;
      return { fileName: file.split('/').pop(), lineNumber: Number(line),
        className: dot > 0 ? fn.slice(0, dot) : null, functionName: fn ? fn.slice(dot + 1) : '<anonymous>' };
    });
  const causes = err.cause instanceof Error && depth < 20 ? [failureOf(err.cause, source, depth + 1)] : [];
  return failure(String(err.message), err.name || 'Error', source, causes, frames);
}

/** A happy-path or absolute deadline of the run's context that passed, as a failure document, or null. */
function deadlineMissed(run, source) {
  const context = run.context === null ? {} : JSON.parse(run.context);
  for (const [key, kind, type] of [['coop.deadline.happy-path', 'Happy-path', 'HappyPath'],
    ['coop.deadline.absolute', 'Absolute', 'Absolute']]) {
    const d = context[key];
    if (d && new Date(d.at) <= run.claimed_at) {
      return failure(`${kind} deadline ${d.at} (set by ${d.source}) passed at ${run.claimed_at.toISOString()}`,
        `dev.coop.failure.${type}DeadlineMissedException`, source, []);
    }
  }
  return null;
}

module.exports = { TYPE, failure, failureOf, deadlineMissed };
