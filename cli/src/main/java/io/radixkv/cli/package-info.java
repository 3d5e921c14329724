/** The radixkv command line (picocli). */
package io.radixkv.cli;
