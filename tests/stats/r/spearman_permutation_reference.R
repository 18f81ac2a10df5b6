# Reference P values for hce.stats.correlation's Spearman permutation P (tests/stats/test_spearman_permutation.py).
#
# Regenerate from the repository root (needs R with jsonlite; Debian: apt-get install r-base-core r-cran-jsonlite):
#
#   Rscript tests/stats/r/spearman_permutation_reference.R tests/stats/data
#
# It writes tests/stats/data/spearman_permutation_reference.json: for each case x, y, Spearman's rho (cor with
# method = "spearman", average ranks) and the two-sided permutation P computed by brute force over all n!
# permutations of y (every permutation equally likely; ties kept), plus, for untied cases, R's own
# cor.test(method = "spearman", exact = TRUE) P (algorithm AS 89, exact for n <= 9) and the t approximation
# (exact = FALSE).

suppressPackageStartupMessages(library(jsonlite))
args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript spearman_permutation_reference.R OUT_DIR")

permutations <- function(n) {
  if (n == 1) return(matrix(1L, 1, 1))
  smaller <- permutations(n - 1)
  do.call(rbind, lapply(seq_len(n), function(i) {
    cbind(i, ifelse(smaller >= i, smaller + 1L, smaller))
  }))
}

brute_p <- function(x, y) {
  a <- rank(x) - mean(rank(x))
  b <- rank(y) - mean(rank(y))
  observed <- abs(sum(a * b))
  perms <- permutations(length(y))
  null <- abs(apply(perms, 1, function(p) sum(a * b[p])))
  mean(null >= observed - 1e-9 * max(1, observed))
}

cases <- list(
  # Success Metric 5 of the demo: mean confidence vs per-item SD, which takes two values
  sm5 = list(x = c(0.9988, 0.9781, 0.998, 0.9781, 0.998, 0.998, 0.9783, 0.9982),
             y = c(0, 0.3162, 0, 0.3162, 0, 0, 0.3162, 0)),
  two_levels = list(x = 1:8, y = c(0, 0, 0, 0.5, 0.5, 0.5, 0.5, 0.5)),
  ties_both = list(x = c(1, 2, 2, 3, 4, 4, 5), y = c(2, 1, 3, 3, 5, 4, 4)),
  untied_8 = list(x = 1:8, y = c(2, 1, 4, 3, 6, 5, 8, 7)),
  untied_9 = list(x = 1:9, y = c(2, 1, 4, 3, 6, 5, 9, 7, 8)),
  untied_9_weak = list(x = 1:9, y = c(5, 1, 9, 3, 2, 8, 4, 7, 6))
)

out <- lapply(cases, function(case) {
  x <- case$x
  y <- case$y
  tied <- anyDuplicated(x) > 0 || anyDuplicated(y) > 0
  list(x = x, y = y, rho = cor(x, y, method = "spearman"), p_permutation = brute_p(x, y),
       p_cor_test_exact = if (tied) NULL else cor.test(x, y, method = "spearman", exact = TRUE)$p.value,
       p_t = suppressWarnings(cor.test(x, y, method = "spearman", exact = FALSE)$p.value))
})
out$r_version <- R.version.string
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE),
           file.path(args[[1]], "spearman_permutation_reference.json"))
