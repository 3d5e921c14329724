/** The serving engine: request lifecycle, engine thread, streaming, stats. */
package io.radixkv.engine;
