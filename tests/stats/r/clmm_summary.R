# What the clmm reference scripts store of an ordinal::clmm fit (sourced by clmm_reference.R and
# real_judge_reference.R, so both write the same fields the same way). Each script finds it
# beside itself: source(file.path(dirname(sub("^--file=", "", grep("^--file=",
# commandArgs(FALSE), value = TRUE))), "clmm_summary.R")).

# Estimates and standard errors (vcov: the inverse of ordinal's deriv12 Hessian, step 1e-4),
# random-effect standard deviations, logLik, max.grad and cond.H.
clmm_summary <- function(m) {
  s <- summary(m)
  list(
    n = nobs(m),
    loglik = as.numeric(logLik(m)),
    terms = names(coef(m)),
    estimate = unname(coef(m)),
    std_error = unname(s$coefficients[, "Std. Error"]),
    sd = unname(sapply(m$ST, function(st) st[1, 1])),
    sd_group = names(m$ST),
    ngroups = as.list(m$dims$nlev.gf),
    max_grad = max(abs(m$gradient)),
    cond_H = s$condHess
  )
}
