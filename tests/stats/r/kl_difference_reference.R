# Reference values for hce.stats.kl_difference (tests/stats/test_kl_difference.py): H1c's difference of two
# conditions' KL divergences from the items' targets, and its cluster-bootstrap percentile interval over items.
#
# Regenerate from the repository root (needs R with boot and jsonlite; Debian: r-cran-boot r-cran-jsonlite):
#
#   Rscript tests/stats/r/kl_difference_reference.R tests/stats/data
#
# It writes tests/stats/data/kl_difference_reference.json: for each case the data (item, condition, score, target:
# drawn here with set.seed), the smoothed plug-in divergences D(target || A), D(target || B) and their difference,
# computed in plain R arithmetic, and boot::boot's percentile interval (boot.ci type "perc") and replicate SD over
# R = 20000 resamples of whole items (each drawn item brings its target and every attempt of both conditions).

suppressPackageStartupMessages({library(boot); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript kl_difference_reference.R OUT_DIR")

kl <- function(p_counts, q_counts, smoothing) {
  p <- (p_counts + smoothing) / sum(p_counts + smoothing)
  q <- (q_counts + smoothing) / sum(q_counts + smoothing)
  sum(ifelse(p > 0, p * log(p / q), 0))
}

make_case <- function(seed, n_items, n_attempts, noise_a, noise_b, support) {
  set.seed(seed)
  target <- sample(support, n_items, replace = TRUE)
  rows <- expand.grid(attempt = seq_len(n_attempts), condition = c("A", "B"), item = seq_len(n_items),
                      stringsAsFactors = FALSE)
  noise <- ifelse(rows$condition == "A", noise_a, noise_b)
  score <- pmin(max(support), pmax(min(support), round(target[rows$item] + rnorm(nrow(rows), 0, noise))))
  list(item = rows$item, condition = rows$condition, score = score, target = target[rows$item])
}

reference <- function(case, support, smoothing, n_boot = 20000) {
  items <- sort(unique(case$item))
  per_item <- t(sapply(items, function(i) {
    rows <- case$item == i
    c(tabulate(match(case$target[rows][1], support), length(support)),
      tabulate(match(case$score[rows & case$condition == "A"], support), length(support)),
      tabulate(match(case$score[rows & case$condition == "B"], support), length(support)))
  }))
  s <- length(support)
  statistic <- function(m, idx) {
    counts <- colSums(m[idx, , drop = FALSE])
    c(kl(counts[1:s], counts[(s + 1):(2 * s)], smoothing), kl(counts[1:s], counts[(2 * s + 1):(3 * s)], smoothing))
  }
  full <- statistic(per_item, seq_along(items))
  set.seed(1)
  b <- boot(per_item, function(m, idx) { d <- statistic(m, idx); d[1] - d[2] }, R = n_boot)
  ci <- boot.ci(b, conf = 0.95, type = "perc")$percent[4:5]
  list(kl_a = full[1], kl_b = full[2], estimate = full[1] - full[2], ci_low = ci[1], ci_high = ci[2],
       boot_sd = sd(b$t[, 1]), n_boot = n_boot)
}

support <- 5:20
cases <- list(
  demo_size = list(seed = 11, n_items = 12, n_attempts = 8, noise_a = 0.6, noise_b = 2.0, smoothing = 0.5),
  larger = list(seed = 12, n_items = 40, n_attempts = 4, noise_a = 1.0, noise_b = 1.5, smoothing = 0.5),
  no_smoothing_dense = list(seed = 13, n_items = 30, n_attempts = 10, noise_a = 3.0, noise_b = 4.0, smoothing = 0.1)
)
out <- lapply(cases, function(k) {
  data <- make_case(k$seed, k$n_items, k$n_attempts, k$noise_a, k$noise_b, support)
  c(list(data = data, smoothing = k$smoothing), reference(data, support, k$smoothing))
})
out$r_version <- R.version.string
out$boot_version <- as.character(packageVersion("boot"))
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA), file.path(args[1], "kl_difference_reference.json"))
