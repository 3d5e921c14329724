/**
 * The radixkv command line: {@code info}, {@code kernels}, {@code bench}, {@code generate},
 * {@code simulate}. Carries what a library must not: picocli, plotting (XChart), progress
 * bars, HdrHistogram reports and the log4j2 back-end with its configuration.
 *
 * <p>Run with {@code --enable-native-access=io.radixkv}.
 */
module io.radixkv.cli {
    requires io.radixkv;
    requires io.radixkv.server;
    requires io.radixkv.kvtier;
    requires org.apache.logging.log4j;
    requires com.fasterxml.jackson.databind;
    requires info.picocli;
    requires HdrHistogram;
    requires me.tongfei.progressbar;
    requires org.knowm.xchart;
    requires java.desktop;
    requires java.net.http;
    requires java.management;

    exports io.radixkv.cli;
    opens io.radixkv.cli to info.picocli, com.fasterxml.jackson.databind;
}
