// Copies a batch of a sql.js statement's rows into typed arrays, for `sqlsource-sqljs`'s table
// scans. Why a script of its own: a row read cell by cell from Rust is one wasm-bindgen crossing
// per cell, and reading integers as BigInts (sql.js's only exact way) is five times slower than
// as numbers; here the cells are read as plain numbers by JavaScript itself and cross into Rust
// as two typed arrays per batch. Loaded with `importScripts` right after `sql-wasm.js` (the
// worker's wasm-bindgen glue has no module scope to bundle it: `--target no-modules`).
//
// Each cell gets a tag and a number:
//   0 NULL;
//   1 an integer, exact (|v| <= 2^53 - 1);
//   2 a real;
//   3 a text and 4 a blob: the number is its index in `extra`;
//   5 an integer past 2^53: the number is the index in `extra` of its decimal text.
// A row with an integer that a number cannot hold exactly is read again with BigInts (tag 5);
// readers that expect such ids split them in SQL instead (`sqlsource::wide_halves`), so this is
// the rare path. A real that happens to be whole comes as an integer (tag 1).
(function () {
  // A cell that is not a number: NULL, a text or a blob.
  function putOther(v, k, nums, tags, extra) {
    if (v === null || v === undefined) {
      tags[k] = 0;
      nums[k] = 0;
    } else {
      tags[k] = typeof v === 'string' ? 3 : 4;
      nums[k] = extra.length;
      extra.push(v);
    }
  }

  // The row's cells as numbers; false if one is an integer past 2^53 (the row is then read
  // again, and what this put in `extra` stays unused).
  function putNumbers(cells, at, columns, nums, tags, extra) {
    for (var i = 0; i < columns; i++) {
      var v = i < cells.length ? cells[i] : null;
      if (typeof v !== 'number') {
        putOther(v, at + i, nums, tags, extra);
      } else if (!Number.isInteger(v)) {
        tags[at + i] = 2;
        nums[at + i] = v;
      } else if (Number.isSafeInteger(v)) {
        tags[at + i] = 1;
        nums[at + i] = v;
      } else {
        return false;
      }
    }
    return true;
  }

  // The row's cells read with BigInts: exact integers whatever their size.
  function putExact(cells, at, columns, nums, tags, extra) {
    for (var i = 0; i < columns; i++) {
      var v = i < cells.length ? cells[i] : null;
      if (typeof v === 'bigint') {
        if (v >= -9007199254740991n && v <= 9007199254740991n) {
          tags[at + i] = 1;
          nums[at + i] = Number(v);
        } else {
          tags[at + i] = 5;
          nums[at + i] = extra.length;
          extra.push(v.toString());
        }
      } else if (typeof v === 'number') {
        tags[at + i] = 2;
        nums[at + i] = v;
      } else {
        putOther(v, at + i, nums, tags, extra);
      }
    }
  }

  var exact = { useBigInt: true };
  self.ncclscopeSqlBatch = function (stmt, columns, maxRows, nums, tags, extra) {
    var rows = 0;
    while (rows < maxRows && stmt.step()) {
      var at = rows * columns;
      if (!putNumbers(stmt.get(), at, columns, nums, tags, extra)) {
        putExact(stmt.get(null, exact), at, columns, nums, tags, extra);
      }
      rows++;
    }
    return rows;
  };
})();
