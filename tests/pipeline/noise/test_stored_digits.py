"""A value written beside one the source stored is stored alike: a float32 stays a float32, an amount
with a float32 rate's noise keeps that noise, a charted reading keeps its decimals."""

from pipeline.noise.stored_digits import carries_noise, clinical_value, is_single, stored_like, to_single

# The demo's 20 mEq of potassium: a float32 rate of 1/3 mEq/min times 60 minutes.
NOISY_AMOUNT = 20.000000596046448
SINGLE_RATE = 0.3333333432674408


def _nine_digit_form(value: float) -> bool:
    """The form a reviewer found in every made-up duplicate amount and in none of the source's: a long
    fraction cut at nine decimals (26.0000008)."""
    return value != round(value, 6) and value == round(value, 9)


def test_a_value_with_more_digits_than_anything_charted_is_read_as_the_value_it_stands_for():
    assert carries_noise(NOISY_AMOUNT) and carries_noise(SINGLE_RATE)
    assert not carries_noise(98.6) and not carries_noise(0.05) and not carries_noise(0.0)
    assert clinical_value(NOISY_AMOUNT) == 20.0 and clinical_value(98.6) == 98.6


def test_another_amount_beside_a_noisy_one_keeps_its_noise_not_nine_digits_of_it():
    text = stored_like(NOISY_AMOUNT * 1.3, NOISY_AMOUNT)
    value = float(text)
    assert carries_noise(value) and not _nine_digit_form(value), text
    assert clinical_value(value) == 26.0


def test_a_float32_stays_a_float32_and_a_charted_value_keeps_its_decimals():
    rate = float(stored_like(SINGLE_RATE * 1.3, SINGLE_RATE))
    assert is_single(rate) and abs(rate - 0.4333333) < 1e-7
    assert float(stored_like(26.000000000000004, 20.0, single=True)) == 26.0 == to_single(26.0)
    assert stored_like(35.00000000000001, 50.0) == "35"
    assert stored_like(2.1875, 3.13) == "2.19"


def test_a_small_rate_in_step_keeps_its_significant_digits_not_its_decimals():
    assert stored_like(0.0225, 0.05) == "0.0225"
    assert abs(float(stored_like(0.0225, to_single(0.05), single=True)) - 0.0225) < 1e-9


def test_a_short_float32_gives_a_short_float32_not_the_ratios_noise():
    assert stored_like(41.999996185302734, 60.0, single=True) == "42.0"
    assert float(stored_like(0.6500000357627869, 0.5, single=True)) == to_single(0.65)
