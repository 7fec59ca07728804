package dev.coop.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.imageio.ImageIO;

/**
 * A line chart as a PNG, drawn with Java2D (headless) from the benchmark's own numbers: x on a log2 scale (client
 * threads), y linear from zero, one line per series, each point its median with a bar from its minimum to its maximum.
 */
final class Plot {
    private static final int WIDTH = 1040;
    private static final int HEIGHT = 560;
    private static final int LEFT = 90;
    private static final int RIGHT = 30;
    private static final int TOP = 90;
    private static final int BOTTOM = 70;
    private static final Color[] COLORS = {new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c),
            new Color(0x9467bd)};

    /** One line: points (x, median y, min y, max y). */
    static final class Series {
        final String name;
        final List<double[]> points = new ArrayList<>();

        Series(String name) {
            this.name = name;
        }

        void add(double x, double median, double min, double max) {
            points.add(new double[]{x, median, min, max});
        }
    }

    private Plot() {
    }

    static Path draw(Path file, String title, List<String> subtitle, String xLabel, String yLabel,
            List<Series> series) {
        System.setProperty("java.awt.headless", "true");
        BufferedImage img = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, WIDTH, HEIGHT);
            double xMin = Double.MAX_VALUE;
            double xMax = -Double.MAX_VALUE;
            double yMax = 0;
            for (Series s : series) {
                for (double[] p : s.points) {
                    xMin = Math.min(xMin, p[0]);
                    xMax = Math.max(xMax, p[0]);
                    yMax = Math.max(yMax, Double.isNaN(p[3]) ? p[1] : p[3]);
                }
            }
            if (xMin > xMax) {
                xMin = 1;
                xMax = 2;
            }
            // half a doubling of room on either side, so that the end points and their labels stay inside
            double lx0 = log2(xMin) - 0.5;
            double lx1 = Math.max(log2(xMax), log2(xMin) + 1) + 0.5;
            double yTop = niceCeiling(yMax);
            Axes axes = new Axes(lx0, lx1, yTop);
            drawFrame(g, axes, title, subtitle, xLabel, yLabel, series);
            for (int i = 0; i < series.size(); i++) {
                drawSeries(g, axes, series.get(i), COLORS[i % COLORS.length], i % 2 == 0);
            }
        } finally {
            g.dispose();
        }
        try {
            Path dir = file.toAbsolutePath().getParent();
            if (dir != null) {
                Files.createDirectories(dir);
            }
            ImageIO.write(img, "png", file.toFile());
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException("Could not write " + file, e);
        }
    }

    private record Axes(double lx0, double lx1, double yTop) {
        int x(double value) {
            return LEFT + (int) Math.round((log2(value) - lx0) / (lx1 - lx0) * (WIDTH - LEFT - RIGHT));
        }

        int y(double value) {
            return HEIGHT - BOTTOM - (int) Math.round(value / yTop * (HEIGHT - TOP - BOTTOM));
        }
    }

    private static void drawFrame(Graphics2D g, Axes a, String title, List<String> subtitle, String xLabel,
            String yLabel,
            List<Series> series) {
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 18));
        g.drawString(title, LEFT, 28);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        for (int i = 0; i < subtitle.size(); i++) {
            g.drawString(subtitle.get(i), LEFT, 48 + 16 * i);
        }
        FontMetrics fm = g.getFontMetrics();
        for (int i = 0; i <= 5; i++) {
            double v = a.yTop() * i / 5;
            int y = a.y(v);
            g.setColor(new Color(0xe0e0e0));
            g.drawLine(LEFT, y, WIDTH - RIGHT, y);
            g.setColor(Color.BLACK);
            String label = String.format(Locale.ROOT, "%,.0f", v);
            g.drawString(label, LEFT - 8 - fm.stringWidth(label), y + 4);
        }
        for (double lx = Math.ceil(a.lx0()); lx <= a.lx1() + 1e-9; lx++) {
            double v = Math.pow(2, lx);
            int x = a.x(v);
            g.setColor(new Color(0xe0e0e0));
            g.drawLine(x, TOP, x, HEIGHT - BOTTOM);
            g.setColor(Color.BLACK);
            String label = String.format(Locale.ROOT, "%.0f", v);
            g.drawString(label, x - fm.stringWidth(label) / 2, HEIGHT - BOTTOM + 18);
        }
        g.drawLine(LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, HEIGHT - BOTTOM);
        g.drawLine(LEFT, TOP, LEFT, HEIGHT - BOTTOM);
        String xText = xLabel + " (log scale)";
        g.drawString(xText, (WIDTH - fm.stringWidth(xText)) / 2, HEIGHT - 25);
        Graphics2D rotated = (Graphics2D) g.create();
        rotated.rotate(-Math.PI / 2);
        rotated.drawString(yLabel, -(HEIGHT + fm.stringWidth(yLabel)) / 2, 30);
        rotated.dispose();
        int ly = TOP + 16; // the legend, top left: throughput curves rise to the right
        for (int i = 0; i < series.size(); i++) {
            g.setColor(COLORS[i % COLORS.length]);
            g.fillRect(LEFT + 14, ly - 9, 14, 10);
            g.setColor(Color.BLACK);
            g.drawString(series.get(i).name, LEFT + 34, ly);
            ly += 18;
        }
    }

    /** One line; its values are written above the points ({@code above}) or below them, so two lines stay legible. */
    private static void drawSeries(Graphics2D g, Axes a, Series s, Color color, boolean above) {
        g.setColor(color);
        g.setStroke(new BasicStroke(2f));
        int[] prev = null;
        for (double[] p : s.points) {
            int x = a.x(p[0]);
            int y = a.y(p[1]);
            if (prev != null) {
                g.drawLine(prev[0], prev[1], x, y);
            }
            g.fillOval(x - 4, y - 4, 8, 8);
            if (!Double.isNaN(p[2]) && !Double.isNaN(p[3])) {
                g.setStroke(new BasicStroke(1f));
                g.drawLine(x, a.y(p[2]), x, a.y(p[3]));
                g.drawLine(x - 4, a.y(p[2]), x + 4, a.y(p[2]));
                g.drawLine(x - 4, a.y(p[3]), x + 4, a.y(p[3]));
                g.setStroke(new BasicStroke(2f));
            }
            String label = String.format(Locale.ROOT, "%,.0f", p[1]);
            g.drawString(label, x + 6, above ? y - 6 : y + 16);
            prev = new int[]{x, y};
        }
        g.setStroke(new BasicStroke(1f));
    }

    private static double log2(double v) {
        return Math.log(v) / Math.log(2);
    }

    /** A round number at or above {@code v} (a power of ten times 1, 1.5, 2, ... 8), the top of the y axis. */
    static double niceCeiling(double v) {
        if (v <= 0 || Double.isNaN(v)) {
            return 1;
        }
        double p = Math.pow(10, Math.floor(Math.log10(v)));
        for (double m : new double[]{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10}) {
            if (m * p >= v) {
                return m * p;
            }
        }
        return 10 * p;
    }
}
