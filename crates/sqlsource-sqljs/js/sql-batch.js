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
self.ncclscopeSqlBatch = function (stmt, columns, maxRows, nums, tags, extra) {
  var exact = { useBigInt: true };
  var rows = 0;
  while (rows < maxRows && stmt.step()) {
    var cells = stmt.get();
    var at = rows * columns;
    var wide = false;
    for (var i = 0; i < columns; i++) {
      var v = i < cells.length ? cells[i] : null;
      var k = at + i;
      if (typeof v === 'number') {
        if (!Number.isInteger(v)) {
          tags[k] = 2;
        } else if (Number.isSafeInteger(v)) {
          tags[k] = 1;
        } else {
          wide = true;
          break;
        }
        nums[k] = v;
      } else if (v === null || v === undefined) {
        tags[k] = 0;
        nums[k] = 0;
      } else {
        tags[k] = typeof v === 'string' ? 3 : 4;
        nums[k] = extra.length;
        extra.push(v);
      }
    }
    if (wide) {
      cells = stmt.get(null, exact);
      for (var j = 0; j < columns; j++) {
        var w = j < cells.length ? cells[j] : null;
        var c = at + j;
        if (typeof w === 'bigint') {
          if (w >= -9007199254740991n && w <= 9007199254740991n) {
            tags[c] = 1;
            nums[c] = Number(w);
          } else {
            tags[c] = 5;
            nums[c] = extra.length;
            extra.push(w.toString());
          }
        } else if (typeof w === 'number') {
          tags[c] = 2;
          nums[c] = w;
        } else if (w === null || w === undefined) {
          tags[c] = 0;
          nums[c] = 0;
        } else {
          tags[c] = typeof w === 'string' ? 3 : 4;
          nums[c] = extra.length;
          extra.push(w);
        }
      }
    }
    rows++;
  }
  return rows;
};
