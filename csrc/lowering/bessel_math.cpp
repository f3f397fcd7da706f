#include "lowering/bessel_math.h"

#include <cmath>
#include <limits>
#include <vector>

#include "lowering/elementwise_ops.h"
#include "lowering/hlo.h"
#include "lowering/special_math.h"

namespace tpu::lowering::special {

namespace {

using ir::Builder;
using ir::DType;
using ir::Value;
using ew::cst;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Chebyshev coefficients (c_0 first) from tools/fit_bessel_math.py; the F32 tables are the
// F64 series truncated where the terms fall below 3e-9 of the largest.
const std::vector<double> kI0SmallF64 = {
    0.33839763720473804, -0.3046826723431984, 0.17162090152220878, -0.094901097048047644,
    0.049305284239670708, -0.023737414805899469, 0.010546460394594998, -0.0043243099950505759,
    0.0016394756169413358, -0.00057637557453858237, 0.00018850288509584166,
    -5.7541950100821037e-5, 1.6448448070728897e-5, -4.4167383584587506e-6,
    1.1173875391201037e-6, -2.6707938539406117e-7, 6.0469950225419189e-8, -1.300025009986248e-8,
    2.6598237246823867e-9, -5.1897956016352629e-10, 9.6758090353732369e-11,
    -1.7268262914415557e-11, 2.9550526631296398e-12, -4.8564467831119295e-13,
    7.6761854986049356e-14, -1.1685332877993452e-14, 1.715391285555133e-15,
    -2.4312798465479547e-16, 3.3307945188222381e-17, -4.4153416464793394e-18};
const std::vector<double> kI0SmallF32 = {
    0.33839763720473804, -0.3046826723431984, 0.17162090152220878, -0.094901097048047644,
    0.049305284239670708, -0.023737414805899469, 0.010546460394594998, -0.0043243099950505759,
    0.0016394756169413358, -0.00057637557453858237, 0.00018850288509584166,
    -5.7541950100821037e-5, 1.6448448070728897e-5, -4.4167383584587506e-6,
    1.1173875391201037e-6, -2.6707938539406117e-7, 6.0469950225419189e-8, -1.300025009986248e-8,
    2.6598237246823867e-9};
const std::vector<double> kI0LargeF64 = {
    0.40224520550705442, 0.0033691164782556941, 6.889758346916824e-5, 2.8913705208347565e-6,
    2.0489185894690637e-7, 2.2666689904981781e-8, 3.3962320257083863e-9, 4.9406023882249696e-10,
    1.1889147107846438e-11, -3.1499165279632414e-11, -1.3215811840447713e-11,
    -1.7941785315068061e-12, 7.1801244513836662e-13, 3.8527783827421427e-13,
    1.5400862175214098e-14, -4.1505693472872221e-14, -9.5548466988283076e-15,
    3.8116806693526224e-15, 1.7725601330565264e-15, -3.4254856196772191e-16,
    -2.8276239805165835e-16, 3.4612228676974611e-17, 4.4656214202967601e-17,
    -4.830504485944183e-18, -7.2331804878747543e-18};
const std::vector<double> kI0LargeF32 = {
    0.40224520550705442, 0.0033691164782556941, 6.889758346916824e-5, 2.8913705208347565e-6,
    2.0489185894690637e-7, 2.2666689904981781e-8, 3.3962320257083863e-9};
const std::vector<double> kI1SmallF64 = {
    0.5016557960671141, 0.21434352751696324, 0.18731172817813779, -0.0028663873648937637,
    0.017208834137830863, -0.0033244300897784509, 0.0014548980187094754,
    -0.00037900013304999211, 0.00010796419226905365, -2.6550877356173355e-5,
    6.2407596646978541e-6, -1.3557356536724371e-6, 2.7714239364516566e-7,
    -5.3207467888378809e-8, 9.6422682617793357e-9, -1.6529004075997957e-9,
    2.6879362045972825e-10, -4.1562195588171201e-11, 6.1243473984968221e-12,
    -8.6175729685915645e-13, 1.1601023796285066e-13, -1.4967665782311688e-14,
    1.8538099859848629e-15, -2.2074328443875367e-16, 2.5306636581163284e-17};
const std::vector<double> kI1SmallF32 = {
    0.5016557960671141, 0.21434352751696324, 0.18731172817813779, -0.0028663873648937637,
    0.017208834137830863, -0.0033244300897784509, 0.0014548980187094754,
    -0.00037900013304999211, 0.00010796419226905365, -2.6550877356173355e-5,
    6.2407596646978541e-6, -1.3557356536724371e-6, 2.7714239364516566e-7,
    -5.3207467888378809e-8, 9.6422682617793357e-9, -1.6529004075997957e-9};
const std::vector<double> kI1LargeF64 = {
    0.38928811750914006, -0.0097610974913614684, -0.00011058893876262372,
    -3.8825648088776904e-6, -2.5122362378702089e-7, -2.6314688468895195e-8,
    -3.835380385964237e-9, -5.5897434621965838e-10, -1.8974958123505412e-11,
    3.2526035830154882e-11, 1.4125807436613781e-11, 2.0356285441470895e-12,
    -7.1985517762459085e-13, -4.0835511110921973e-13, -2.1015418427726643e-14,
    4.2724400167119514e-14, 1.0420276984128803e-14, -3.8144030724370078e-15,
    -1.8803547755107824e-15, 3.3082023109209283e-16, 2.9626289976459501e-16,
    -3.209525921993424e-17, -4.6503053684893584e-17, 4.4143483230717089e-18,
    7.5172963108421051e-18};
const std::vector<double> kI1LargeF32 = {
    0.38928811750914006, -0.0097610974913614684, -0.00011058893876262372,
    -3.8825648088776904e-6, -2.5122362378702089e-7, -2.6314688468895195e-8,
    -3.835380385964237e-9};
const std::vector<double> kK0SmallF64 = {
    -0.26766369661695138, 0.34428989992462849, 0.035979936515361502, 0.0012646154114469259,
    2.2862121031194518e-5, 2.5347910790261495e-7, 1.9045163772202089e-9, 1.0349695257633625e-11,
    4.2598161427910826e-14, 1.3744654358807509e-16};
const std::vector<double> kK0SmallF32 = {
    -0.26766369661695138, 0.34428989992462849, 0.035979936515361502, 0.0012646154114469259,
    2.2862121031194518e-5, 2.5347910790261495e-7, 1.9045163772202089e-9};
const std::vector<double> kK0LargeF64 = {
    1.2201515410329777, -0.031448101311964501, 0.0015698838857300534, -0.00012849549581627803,
    1.3949813718876499e-5, -1.8317555227191195e-6, 2.7668136394450151e-7,
    -4.6604898976879477e-8, 8.5740340174142261e-9, -1.6975345093890615e-9,
    3.5773972814003284e-10, -7.957489244477397e-11, 1.8559491149549266e-11,
    -4.5145978833745192e-12, 1.1403405882073442e-12, -2.9800969231481784e-13,
    8.0328907750683744e-14, -2.2275133267462964e-14, 6.340076476276646e-15,
    -1.8485933779209072e-15, 5.5120559994043334e-16, -1.6782311257549006e-16,
    5.2103917776435541e-17, -1.6475805939842633e-17};
const std::vector<double> kK0LargeF32 = {
    1.2201515410329777, -0.031448101311964501, 0.0015698838857300534, -0.00012849549581627803,
    1.3949813718876499e-5, -1.8317555227191195e-6, 2.7668136394450151e-7,
    -4.6604898976879477e-8, 8.5740340174142261e-9};
const std::vector<double> kK1SmallF64 = {
    0.76265011366947389, -0.35315596077654488, -0.12261118082265715, -0.0069757238596398644,
    -0.00017302889575130521, -2.4334061415659682e-6, -2.2133876307347259e-8,
    -1.4114883926335278e-10, -6.666901694199329e-13, -2.4274498505193659e-15};
const std::vector<double> kK1SmallF32 = {
    0.76265011366947389, -0.35315596077654488, -0.12261118082265715, -0.0069757238596398644,
    -0.00017302889575130521, -2.4334061415659682e-6, -2.2133876307347259e-8};
const std::vector<double> kK1LargeF64 = {
    1.3603130952422213, 0.10392373657681724, -0.0028578168596227794, 0.00019521551847135163,
    -1.936197974166083e-5, 2.4064849478372171e-6, -3.5019606030878125e-7, 5.7410841254500493e-8,
    -1.0345762465678097e-8, 2.0150497551970346e-9, -4.1903547593419256e-10,
    9.2183151876053141e-11, -2.129967838427791e-11, 5.1396396734823435e-12,
    -1.2891739609498229e-12, 3.3484196660522431e-13, -8.9767051820101461e-14,
    2.4771544242195987e-14, -7.0198370892147689e-15, 2.0387031662398609e-15,
    -6.0570472706430178e-16, 1.8380935752430454e-16, -5.6894628491936484e-17,
    1.7940510478863573e-17};
const std::vector<double> kK1LargeF32 = {
    1.3603130952422213, 0.10392373657681724, -0.0028578168596227794, 0.00019521551847135163,
    -1.936197974166083e-5, 2.4064849478372171e-6, -3.5019606030878125e-7, 5.7410841254500493e-8,
    -1.0345762465678097e-8};
const std::vector<double> kJ0SmallF64 = {
    0.15772797147489012, -0.0087234423528522213, 0.26517861320333681, -0.37009499387264978,
    0.15806710233209726, -0.034893769411408885, 0.0048191800694676045, -0.00046062616620627505,
    3.2460328821005081e-5, -1.7619469077621507e-6, 7.6081635924187819e-8,
    -2.6792535305576729e-9, 7.8486963144794644e-11, -1.9438346867370166e-12,
    4.1253205956343739e-14, -7.5885081254475463e-16, 1.2218515873961411e-17};
const std::vector<double> kJ0SmallF32 = {
    0.15772797147489012, -0.0087234423528522213, 0.26517861320333681, -0.37009499387264978,
    0.15806710233209726, -0.034893769411408885, 0.0048191800694676045, -0.00046062616620627505,
    3.2460328821005081e-5, -1.7619469077621507e-6, 7.6081635924187819e-8, -2.6792535305576729e-9};
const std::vector<double> kY0SmallF64 = {
    0.036454698091160444, -0.27832370940758248, 0.29604999902071482, 0.098255084081878641,
    -0.10755155280627784, 0.031799074084414515, -0.0051613971058107149, 0.00054985253200390115,
    -4.1996983149420131e-5, 2.4290361107923794e-6, -1.1049969793472956e-7,
    4.0665173659791105e-9, -1.2374148898289852e-10, 3.1685725528945944e-12,
    -6.9269560324310011e-14, 1.3086308625876684e-15, -2.1586201986914483e-17};
const std::vector<double> kY0SmallF32 = {
    0.036454698091160444, -0.27832370940758248, 0.29604999902071482, 0.098255084081878641,
    -0.10755155280627784, 0.031799074084414515, -0.0051613971058107149, 0.00054985253200390115,
    -4.1996983149420131e-5, 2.4290361107923794e-6, -1.1049969793472956e-7, 4.0665173659791105e-9};
const std::vector<double> kJ1SmallF64 = {
    0.081044846325658115, -0.14897514506765211, 0.1609992623572097, -0.082680491766817907,
    0.022213639654966035, -0.003646940600769276, 0.00040503377283548218, -3.2555548668572585e-5,
    1.9858774049915167e-6, -9.5219847567504362e-8, 3.6871337590971482e-9,
    -1.1780266226958848e-10, 3.1601545803480033e-12, -7.2217552396517734e-14,
    1.4232144003513942e-15, -2.4441972916190464e-17};
const std::vector<double> kJ1SmallF32 = {
    0.081044846325658115, -0.14897514506765211, 0.1609992623572097, -0.082680491766817907,
    0.022213639654966035, -0.003646940600769276, 0.00040503377283548218, -3.2555548668572585e-5,
    1.9858774049915167e-6, -9.5219847567504362e-8, 3.6871337590971482e-9};
const std::vector<double> kY1SmallF64 = {
    0.038300769852423779, -0.081825614127328264, -0.024867707612196401, 0.047967452752746983,
    -0.018525884510898022, 0.0036806076878235111, -0.00046272540602933687,
    4.0694002695808699e-5, -2.6617695125295626e-6, 1.3506026913254338e-7,
    -5.4835241103362766e-9, 1.8245086841229008e-10, -5.0706666365911291e-12,
    1.1956162517587949e-13, -2.4231624427124732e-15, 4.2681265130729624e-17};
const std::vector<double> kY1SmallF32 = {
    0.038300769852423779, -0.081825614127328264, -0.024867707612196401, 0.047967452752746983,
    -0.018525884510898022, 0.0036806076878235111, -0.00046272540602933687,
    4.0694002695808699e-5, -2.6617695125295626e-6, 1.3506026913254338e-7, -5.4835241103362766e-9};
const std::vector<double> kP0F64 = {
    0.99946034934751867, -0.00053652204681321174, 3.0751847875194746e-6, -5.1705945376060977e-8,
    1.6306464635151383e-9, -7.86409137723707e-11, 5.1682623873491925e-12,
    -4.3045788699253912e-13, 4.3265957431549406e-14, -5.0690340959352361e-15,
    6.7480722157338737e-16, -1.0011513723467786e-16, 1.6305919233744185e-17};
const std::vector<double> kP0F32 = {
    0.99946034934751867, -0.00053652204681321174, 3.0751847875194746e-6, -5.1705945376060977e-8};
const std::vector<double> kQ0F64 = {
    -0.12444683684269607, 0.00054708159540893197, -5.9315987288485178e-6, 1.4377965798375193e-7,
    -5.817532749493056e-9, 3.3760975237349908e-10, -2.5653979367973078e-11,
    2.404916100281365e-12, -2.6690625482579416e-13, 3.4041800321963689e-14,
    -4.87994410531204e-15, 7.7297031762426054e-16, -1.3348852171502517e-16,
    2.4865952389390515e-17, -4.9528926298865159e-18};
const std::vector<double> kQ0F32 = {
    -0.12444683684269607, 0.00054708159540893197, -5.9315987288485178e-6, 1.4377965798375193e-7,
    -5.817532749493056e-9};
const std::vector<double> kP1F64 = {
    1.0009030408600137, 0.00089898983308594086, -3.9872843004889085e-6, 6.1776339606442985e-8,
    -1.8718907491063066e-9, 8.8168986595823389e-11, -5.7048636403956447e-12,
    4.6991955152305424e-13, -4.6842237839904892e-14, 5.4526748960447172e-15,
    -7.2211808422740179e-16, 1.0667689114335412e-16, -1.7312313216116335e-17};
const std::vector<double> kP1F32 = {
    1.0009030408600137, 0.00089898983308594086, -3.9872843004889085e-6, 6.1776339606442985e-8};
const std::vector<double> kQ1F64 = {
    0.3742222965562826, -0.00077021788393256635, 7.3108922063643633e-6, -1.6767825107266738e-7,
    6.5833546621204433e-9, -3.7490909505415562e-10, 2.8121750359748865e-11,
    -2.6114525394623199e-12, 2.8774212663332234e-13, -3.6490019160618378e-14,
    5.2066263662267072e-15, -8.2153180254585943e-16, 1.4141084390211833e-16,
    -2.6267615898385292e-17, 5.2192649196714082e-18};
const std::vector<double> kQ1F32 = {
    0.3742222965562826, -0.00077021788393256635, 7.3108922063643633e-6, -1.6767825107266738e-7,
    6.5833546621204433e-9};

struct Series {
  const std::vector<double>& f32;
  const std::vector<double>& f64;
};
#define TPU_SERIES(name) Series{k##name##F32, k##name##F64}

Value series(Builder& b, const Value& u, const Series& s) {
  return chebyshev_series(b, u, u.dtype() == DType::F64 ? s.f64 : s.f32);
}

// u for the intervals: x in [0, 8] -> x/4 - 1; x >= 8 -> 16/x - 1; x in [0, 2] -> x^2/2 - 1;
// x >= 2 -> 4/x - 1; x in [0, 8] -> x^2/32 - 1; x >= 8 -> 128/x^2 - 1.
Value linear_map(Builder& b, const Value& x, double scale) { return ew::add_c(b, ew::mul_c(b, x, scale), -1); }
Value inverse_map(Builder& b, const Value& x, double scale) {
  return ew::add_c(b, hlo::div(b, cst(b, x, scale), x), -1);
}

Value log_half(Builder& b, const Value& x) { return ew::log(b, ew::mul_c(b, x, 0.5)); }

// The large-argument Hankel form sqrt(2/(pi a)) (P cos chi - Q sin chi) of J_n and
// sqrt(2/(pi a)) (P sin chi + Q cos chi) of Y_n, chi = a - (2n+1) pi/4. cos chi and sin chi are
// combined from cos a and sin a, so a itself, not a rounded a - pi/4, is reduced.
struct Hankel {
  Value j, y;
};
Hankel hankel(Builder& b, const Value& a, int n) {
  Value safe = ew::maximum(b, a, cst(b, a, 8));
  Value inv2 = inverse_map(b, hlo::mul(b, safe, safe), 128);
  Value p = series(b, inv2, n == 0 ? TPU_SERIES(P0) : TPU_SERIES(P1));
  Value q = hlo::div(b, series(b, inv2, n == 0 ? TPU_SERIES(Q0) : TPU_SERIES(Q1)), safe);
  Value c = hlo::unary(b, "stablehlo.cosine", safe), s = hlo::unary(b, "stablehlo.sine", safe);
  // n = 0: chi = a - pi/4: cos chi = (c + s)/sqrt2, sin chi = (s - c)/sqrt2.
  // n = 1: chi = a - 3pi/4: cos chi = (s - c)/sqrt2, sin chi = -(s + c)/sqrt2.
  Value cos_chi = n == 0 ? hlo::add(b, c, s) : hlo::sub(b, s, c);
  Value sin_chi = n == 0 ? hlo::sub(b, s, c) : hlo::neg(b, hlo::add(b, s, c));
  Value scale = ew::sqrt(b, hlo::div(b, cst(b, safe, 1 / M_PI), safe));  // sqrt(2/(pi a)) / sqrt2
  Value j = hlo::mul(b, scale, hlo::sub(b, hlo::mul(b, p, cos_chi), hlo::mul(b, q, sin_chi)));
  Value y = hlo::mul(b, scale, hlo::add(b, hlo::mul(b, p, sin_chi), hlo::mul(b, q, cos_chi)));
  return {j, y};
}

// Shared domain of Y and K: NaN for x < 0 (and NaN), `at_zero` at 0.
Value second_kind_domain(Builder& b, const Value& x, Value r, double at_zero) {
  r = hlo::select(b, ew::eq(b, x, 0), cst(b, r, at_zero), r);
  return hlo::select(b, ew::lt(b, x, 0), cst(b, r, kNaN), r);
}

Value small_j0(Builder& b, const Value& a) {
  return series(b, linear_map(b, hlo::mul(b, a, a), 1.0 / 32), TPU_SERIES(J0Small));
}
Value small_j1(Builder& b, const Value& x) {
  return hlo::mul(b, x, series(b, linear_map(b, hlo::mul(b, x, x), 1.0 / 32), TPU_SERIES(J1Small)));
}

}  // namespace

Value bessel_i0e(Builder& b, const Value& x) {
  Value a = ew::abs(b, x);
  Value small = series(b, linear_map(b, ew::minimum(b, a, cst(b, a, 8)), 0.25), TPU_SERIES(I0Small));
  Value big_a = ew::maximum(b, a, cst(b, a, 8));
  Value large = hlo::div(b, series(b, inverse_map(b, big_a, 16), TPU_SERIES(I0Large)), ew::sqrt(b, big_a));
  return hlo::select(b, ew::le(b, a, 8), small, large);
}

Value bessel_i1e(Builder& b, const Value& x) {
  Value a = ew::abs(b, x);
  Value s = ew::minimum(b, a, cst(b, a, 8));
  Value g = series(b, linear_map(b, s, 0.25), TPU_SERIES(I1Small));  // I1(x) e^(-x/2) / x
  Value small = hlo::mul(b, hlo::mul(b, x, g), ew::exp(b, ew::mul_c(b, s, -0.5)));
  Value big_a = ew::maximum(b, a, cst(b, a, 8));
  Value large = hlo::div(b, series(b, inverse_map(b, big_a, 16), TPU_SERIES(I1Large)), ew::sqrt(b, big_a));
  return hlo::select(b, ew::le(b, a, 8), small, ew::copysign(b, large, x));
}

// As the CPU kernels, e^|x| overflows to inf (and inf * 0 = NaN at |x| = inf).
Value bessel_i0(Builder& b, const Value& x) { return hlo::mul(b, bessel_i0e(b, x), ew::exp(b, ew::abs(b, x))); }
Value bessel_i1(Builder& b, const Value& x) { return hlo::mul(b, bessel_i1e(b, x), ew::exp(b, ew::abs(b, x))); }

Value bessel_k0(Builder& b, const Value& x, bool scaled) {
  Value s = ew::minimum(b, x, cst(b, x, 2));
  Value small = hlo::sub(b, series(b, linear_map(b, hlo::mul(b, s, s), 0.5), TPU_SERIES(K0Small)),
                         hlo::mul(b, log_half(b, s), bessel_i0(b, s)));
  if (scaled) small = hlo::mul(b, small, ew::exp(b, s));
  Value l = ew::maximum(b, x, cst(b, x, 2));
  Value large = hlo::div(b, series(b, inverse_map(b, l, 4), TPU_SERIES(K0Large)), ew::sqrt(b, l));
  if (!scaled) large = hlo::mul(b, large, ew::exp(b, hlo::neg(b, l)));
  return second_kind_domain(b, x, hlo::select(b, ew::le(b, x, 2), small, large), kInf);
}

Value bessel_k1(Builder& b, const Value& x, bool scaled) {
  Value s = ew::minimum(b, x, cst(b, x, 2));
  Value small = hlo::add(b, hlo::div(b, series(b, linear_map(b, hlo::mul(b, s, s), 0.5), TPU_SERIES(K1Small)), s),
                         hlo::mul(b, log_half(b, s), bessel_i1(b, s)));
  if (scaled) small = hlo::mul(b, small, ew::exp(b, s));
  Value l = ew::maximum(b, x, cst(b, x, 2));
  Value large = hlo::div(b, series(b, inverse_map(b, l, 4), TPU_SERIES(K1Large)), ew::sqrt(b, l));
  if (!scaled) large = hlo::mul(b, large, ew::exp(b, hlo::neg(b, l)));
  return second_kind_domain(b, x, hlo::select(b, ew::le(b, x, 2), small, large), kInf);
}

Value bessel_j0(Builder& b, const Value& x) {
  Value a = ew::abs(b, x);
  Value small = small_j0(b, ew::minimum(b, a, cst(b, a, 8)));
  Value r = hlo::select(b, ew::le(b, a, 8), small, hankel(b, a, 0).j);
  return hlo::select(b, ew::is_inf(b, x), cst(b, x, kNaN), r);  // as the CPU kernel
}

Value bessel_j1(Builder& b, const Value& x) {
  Value a = ew::abs(b, x);
  Value small = small_j1(b, ew::copysign(b, ew::minimum(b, a, cst(b, a, 8)), x));
  Value large = hankel(b, a, 1).j;  // J1 is odd
  large = hlo::select(b, ew::lt(b, x, 0), hlo::neg(b, large), large);
  Value r = hlo::select(b, ew::le(b, a, 8), small, large);
  return hlo::select(b, ew::is_inf(b, x), cst(b, x, kNaN), r);
}

Value bessel_y0(Builder& b, const Value& x) {
  Value s = ew::minimum(b, x, cst(b, x, 8));
  Value small = hlo::add(b, series(b, linear_map(b, hlo::mul(b, s, s), 1.0 / 32), TPU_SERIES(Y0Small)),
                         ew::mul_c(b, hlo::mul(b, log_half(b, s), small_j0(b, s)), 2 / M_PI));
  Value r = hlo::select(b, ew::le(b, x, 8), small, hankel(b, x, 0).y);
  r = hlo::select(b, ew::is_inf(b, x), cst(b, x, kNaN), r);
  return second_kind_domain(b, x, r, -kInf);
}

Value bessel_y1(Builder& b, const Value& x) {
  Value s = ew::minimum(b, x, cst(b, x, 8));
  Value log_term = hlo::sub(b, hlo::mul(b, log_half(b, s), small_j1(b, s)), hlo::div(b, cst(b, s, 1), s));
  Value small = hlo::add(b, hlo::mul(b, s, series(b, linear_map(b, hlo::mul(b, s, s), 1.0 / 32), TPU_SERIES(Y1Small))),
                         ew::mul_c(b, log_term, 2 / M_PI));
  Value r = hlo::select(b, ew::le(b, x, 8), small, hankel(b, x, 1).y);
  r = hlo::select(b, ew::is_inf(b, x), cst(b, x, kNaN), r);
  return second_kind_domain(b, x, r, -kInf);
}

}  // namespace tpu::lowering::special
