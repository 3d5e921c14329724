package io.radixkv.cli;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.IExecutionExceptionHandler;
import picocli.CommandLine.IParameterExceptionHandler;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;

/**
 * Entry point of the {@code radixkv} command line.
 *
 * <p>Exit codes: 0 success, 1 runtime failure (one line on stderr), 2 usage error (one line
 * on stderr naming the bad argument). Stack traces are printed only with {@code --debug}.
 */
@Command(name = "radixkv",
        mixinStandardHelpOptions = true,
        versionProvider = Main.Version.class,
        description = "KV-cache engine for LLM serving: radix prefix cache, paged KV, kernels.",
        subcommands = {
            InfoCommand.class,
            KernelsCommand.class,
            SimulateCommand.class,
            BenchCommand.class,
            GenerateCommand.class,
            ServeCommand.class,
            CommandLine.HelpCommand.class
        })
public final class Main implements Callable<Integer> {
    public static final int EXIT_OK = 0;
    public static final int EXIT_FAILURE = 1;
    public static final int EXIT_USAGE = 2;

    @Spec
    CommandSpec spec;

    @Option(names = "--debug", scope = ScopeType.INHERIT,
            description = "Print stack traces of failures.")
    boolean debug;

    @Override
    public Integer call() {
        // the list comes from the registered commands, so a new one is never left out
        String names = spec.subcommands().keySet().stream()
                .filter(name -> !name.equals("help"))
                .collect(Collectors.joining(", "));
        throw new ParameterException(spec.commandLine(), "missing subcommand (one of " + names + ")");
    }

    public static void main(String[] args) {
        // Charts are rendered off-screen; never try to open a display.
        System.setProperty("java.awt.headless", "true");
        // The CLI reports progress itself; library INFO logs only with -Dradixkv.log.level=info.
        if (System.getProperty("radixkv.log.level") == null) {
            System.setProperty("radixkv.log.level", "warn");
        }
        PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
        PrintWriter err = new PrintWriter(System.err, true, StandardCharsets.UTF_8);
        int code = run(out, err, args);
        out.flush();
        err.flush();
        System.exit(code);
    }

    /** Runs the command line with the given streams and returns the exit code (used by tests). */
    public static int run(PrintWriter out, PrintWriter err, String... args) {
        CommandLine cl = commandLine(out, err);
        try {
            return cl.execute(args);
        } catch (Throwable t) {
            // Errors (linkage, out of memory) escape picocli's handlers: same one-line report.
            ParseResult pr = cl.getParseResult();
            CommandLine leaf = cl;
            for (ParseResult p = pr; p != null; p = p.subcommand()) {
                leaf = p.commandSpec().commandLine();
            }
            return report(t, leaf, pr);
        }
    }

    /** The configured picocli command line: one-line errors, exit codes 0/1/2. */
    public static CommandLine commandLine(PrintWriter out, PrintWriter err) {
        CommandLine cl = new CommandLine(new Main());
        cl.setOut(out);
        cl.setErr(err);
        cl.setCaseInsensitiveEnumValuesAllowed(true);
        cl.setParameterExceptionHandler(USAGE_ERRORS);
        cl.setExecutionExceptionHandler(FAILURES);
        return cl;
    }

    private static final IParameterExceptionHandler USAGE_ERRORS = (ex, args) -> {
        CommandLine cl = ex.getCommandLine();
        PrintWriter err = cl.getErr();
        String name = cl.getCommandSpec().qualifiedName();
        err.println(name + ": " + oneLine(ex.getMessage()) + " (see '" + name + " --help')");
        if (debugRequested(cl.getParseResult())) {
            ex.printStackTrace(err);
        }
        err.flush();
        return EXIT_USAGE;
    };

    private static final IExecutionExceptionHandler FAILURES = Main::report;

    private static int report(Throwable ex, CommandLine cl, ParseResult parseResult) {
        PrintWriter err = cl.getErr();
        String name = cl.getCommandSpec().qualifiedName();
        err.println(name + ": error: " + describe(ex));
        if (debugRequested(parseResult)) {
            ex.printStackTrace(err);
        }
        err.flush();
        return EXIT_FAILURE;
    }

    /** Exception message on one line; the class name when there is no message. */
    static String describe(Throwable t) {
        Throwable cur = t;
        // Class-initialization wrappers carry no useful message of their own.
        while (cur.getCause() != null && (cur.getMessage() == null
                || cur instanceof ExceptionInInitializerError)) {
            cur = cur.getCause();
        }
        String msg = cur.getMessage();
        String kind = cur.getClass().getSimpleName();
        if (msg == null || msg.isBlank()) {
            return kind;
        }
        return (cur instanceof RuntimeException && !(cur instanceof UnsupportedOperationException)
                ? "" : kind + ": ") + oneLine(msg);
    }

    static String oneLine(String s) {
        return s == null ? "" : s.strip().replaceAll("\\s*\\R\\s*", "; ");
    }

    private static boolean debugRequested(ParseResult pr) {
        for (ParseResult p = pr; p != null; p = p.subcommand()) {
            if (p.hasMatchedOption("--debug")) {
                return true;
            }
        }
        return false;
    }

    /** Version from the module descriptor (set by the build), else the package metadata. */
    static final class Version implements IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {"radixkv " + version()};
        }
    }

    static String version() {
        return io.radixkv.server.OpenAiServer.version();
    }
}
