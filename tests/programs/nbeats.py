"""N-BEATS (Oreshkin et al.), in the style of ElementAI/N-BEATS (models/nbeats.py, common/torch/
losses.py, ops.py): NBeatsBlock of fully connected layers emitting theta, GenericBasis,
TrendBasis with a polynomial basis built from np.power of a linspace and registered as a
non-trainable Parameter, SeasonalityBasis with cos/sin harmonics, doubly residual stacking
(backcast subtraction with an input mask, forecast sum), divide_no_nan with NaN/inf masking,
sMAPE / MAPE / MASE losses; trained a few steps on a synthetic trend + seasonality series."""
from typing import Tuple

import numpy as np
import torch as t


def divide_no_nan(a, b):
    """
    a/b where the resulted NaN or Inf are replaced by 0.
    """
    result = a / b
    result[result != result] = .0
    result[result == np.inf] = .0
    return result


def mape_loss(forecast: t.Tensor, target: t.Tensor, mask: t.Tensor) -> t.float:
    weights = divide_no_nan(mask, target)
    return t.mean(t.abs((forecast - target) * weights))


def smape_2_loss(forecast, target, mask) -> t.float:
    return 200 * t.mean(divide_no_nan(t.abs(forecast - target),
                                      t.abs(forecast.data) + t.abs(target.data)) * mask)


def mase_loss(insample: t.Tensor, freq: int, forecast: t.Tensor, target: t.Tensor,
              mask: t.Tensor) -> t.float:
    masep = t.mean(t.abs(insample[:, freq:] - insample[:, :-freq]), dim=1)
    masked_masep_inv = divide_no_nan(mask, masep[:, None])
    return t.mean(t.abs(target - forecast) * masked_masep_inv)


class NBeatsBlock(t.nn.Module):
    """
    N-BEATS block which takes a basis function as an argument.
    """

    def __init__(self, input_size, theta_size: int, basis_function: t.nn.Module, layers: int,
                 layer_size: int):
        super().__init__()
        self.layers = t.nn.ModuleList([t.nn.Linear(in_features=input_size, out_features=layer_size)] +
                                      [t.nn.Linear(in_features=layer_size, out_features=layer_size)
                                       for _ in range(layers - 1)])
        self.basis_parameters = t.nn.Linear(in_features=layer_size, out_features=theta_size)
        self.basis_function = basis_function

    def forward(self, x: t.Tensor) -> Tuple[t.Tensor, t.Tensor]:
        block_input = x
        for layer in self.layers:
            block_input = t.relu(layer(block_input))
        basis_parameters = self.basis_parameters(block_input)
        return self.basis_function(basis_parameters)


class NBeats(t.nn.Module):
    """
    N-Beats Model.
    """

    def __init__(self, blocks: t.nn.ModuleList):
        super().__init__()
        self.blocks = blocks

    def forward(self, x: t.Tensor, input_mask: t.Tensor) -> t.Tensor:
        residuals = x.flip(dims=(1,))
        input_mask = input_mask.flip(dims=(1,))
        forecast = x[:, -1:]
        for i, block in enumerate(self.blocks):
            backcast, block_forecast = block(residuals)
            residuals = (residuals - backcast) * input_mask
            forecast = forecast + block_forecast
        return forecast


class GenericBasis(t.nn.Module):
    """
    Generic basis function.
    """

    def __init__(self, backcast_size: int, forecast_size: int):
        super().__init__()
        self.backcast_size = backcast_size
        self.forecast_size = forecast_size

    def forward(self, theta: t.Tensor):
        return theta[:, :self.backcast_size], theta[:, -self.forecast_size:]


class TrendBasis(t.nn.Module):
    """
    Polynomial function to model trends.
    """

    def __init__(self, degree_of_polynomial: int, backcast_size: int, forecast_size: int):
        super().__init__()
        self.polynomial_size = degree_of_polynomial + 1  # degree of polynomial with constant term
        self.backcast_time = t.nn.Parameter(
            t.tensor(np.concatenate([np.power(np.arange(backcast_size, dtype=np.float64) / backcast_size, i)[None, :]
                                     for i in range(self.polynomial_size)]), dtype=t.float32),
            requires_grad=False)
        self.forecast_time = t.nn.Parameter(
            t.tensor(np.concatenate([np.power(np.arange(forecast_size, dtype=np.float64) / forecast_size, i)[None, :]
                                     for i in range(self.polynomial_size)]), dtype=t.float32), requires_grad=False)

    def forward(self, theta: t.Tensor):
        backcast = t.einsum('bp,pt->bt', theta[:, self.polynomial_size:], self.backcast_time)
        forecast = t.einsum('bp,pt->bt', theta[:, :self.polynomial_size], self.forecast_time)
        return backcast, forecast


class SeasonalityBasis(t.nn.Module):
    """
    Harmonic functions to model seasonality.
    """

    def __init__(self, harmonics: int, backcast_size: int, forecast_size: int):
        super().__init__()
        self.frequency = np.append(np.zeros(1, dtype=np.float32),
                                   np.arange(harmonics, harmonics / 2 * forecast_size,
                                             dtype=np.float32) / harmonics)[None, :]
        backcast_grid = -2 * np.pi * (
            np.arange(backcast_size, dtype=np.float32)[:, None] / forecast_size) * self.frequency
        forecast_grid = 2 * np.pi * (
            np.arange(forecast_size, dtype=np.float32)[:, None] / forecast_size) * self.frequency
        self.backcast_cos_template = t.nn.Parameter(t.tensor(np.transpose(np.cos(backcast_grid)), dtype=t.float32),
                                                    requires_grad=False)
        self.backcast_sin_template = t.nn.Parameter(t.tensor(np.transpose(np.sin(backcast_grid)), dtype=t.float32),
                                                    requires_grad=False)
        self.forecast_cos_template = t.nn.Parameter(t.tensor(np.transpose(np.cos(forecast_grid)), dtype=t.float32),
                                                    requires_grad=False)
        self.forecast_sin_template = t.nn.Parameter(t.tensor(np.transpose(np.sin(forecast_grid)), dtype=t.float32),
                                                    requires_grad=False)

    def forward(self, theta: t.Tensor):
        params_per_harmonic = theta.shape[1] // 4
        backcast_harmonics_cos = t.einsum('bp,pt->bt', theta[:, 2 * params_per_harmonic:3 * params_per_harmonic],
                                          self.backcast_cos_template)
        backcast_harmonics_sin = t.einsum('bp,pt->bt', theta[:, 3 * params_per_harmonic:], self.backcast_sin_template)
        backcast = backcast_harmonics_sin + backcast_harmonics_cos
        forecast_harmonics_cos = t.einsum('bp,pt->bt',
                                          theta[:, :params_per_harmonic], self.forecast_cos_template)
        forecast_harmonics_sin = t.einsum('bp,pt->bt', theta[:, params_per_harmonic:2 * params_per_harmonic],
                                          self.forecast_sin_template)
        forecast = forecast_harmonics_sin + forecast_harmonics_cos
        return backcast, forecast


def interpretable(input_size: int, output_size: int, trend_blocks: int, trend_layers: int,
                  trend_layer_size: int, degree_of_polynomial: int, seasonality_blocks: int,
                  seasonality_layers: int, seasonality_layer_size: int, num_of_harmonics: int):
    trend_block = NBeatsBlock(input_size=input_size,
                              theta_size=2 * (degree_of_polynomial + 1),
                              basis_function=TrendBasis(degree_of_polynomial=degree_of_polynomial,
                                                        backcast_size=input_size,
                                                        forecast_size=output_size),
                              layers=trend_layers,
                              layer_size=trend_layer_size)
    seasonality_block = NBeatsBlock(input_size=input_size,
                                    theta_size=4 * int(
                                        np.ceil(num_of_harmonics / 2 * output_size) - (num_of_harmonics - 1)),
                                    basis_function=SeasonalityBasis(harmonics=num_of_harmonics,
                                                                    backcast_size=input_size,
                                                                    forecast_size=output_size),
                                    layers=seasonality_layers,
                                    layer_size=seasonality_layer_size)

    return NBeats(t.nn.ModuleList(
        [trend_block for _ in range(trend_blocks)] + [seasonality_block for _ in range(seasonality_blocks)]))


def generic(input_size: int, output_size: int, stacks: int, layers: int, layer_size: int):
    return NBeats(t.nn.ModuleList([NBeatsBlock(input_size=input_size,
                                               theta_size=input_size + output_size,
                                               basis_function=GenericBasis(backcast_size=input_size,
                                                                           forecast_size=output_size),
                                               layers=layers,
                                               layer_size=layer_size)
                                   for _ in range(stacks)]))


def make_series(n_series, length, rng):
    tt = np.arange(length, dtype=np.float32)
    level = rng.uniform(5, 10, size=(n_series, 1))
    slope = rng.uniform(-0.05, 0.1, size=(n_series, 1))
    season = rng.uniform(0.5, 2.0, size=(n_series, 1)) * np.sin(2 * np.pi * tt / 6)
    noise = 0.1 * rng.standard_normal((n_series, length))
    return (level + slope * tt + season + noise).astype(np.float32)


def sample_windows(series, insample_size, outsample_size, batch, rng):
    ids = rng.integers(0, series.shape[0], size=batch)
    cuts = rng.integers(insample_size, series.shape[1] - outsample_size + 1, size=batch)
    x = np.stack([series[i, c - insample_size:c] for i, c in zip(ids, cuts)])
    y = np.stack([series[i, c:c + outsample_size] for i, c in zip(ids, cuts)])
    return x, np.ones_like(x), y, np.ones_like(y)


t.manual_seed(0)
t.set_printoptions(precision=4, sci_mode=False)
rng = np.random.default_rng(0)
horizon, lookback = 6, 3
insample_size = horizon * lookback

print("divide_no_nan", divide_no_nan(t.tensor([1.0, 0.0, -2.0, 3.0]), t.tensor([2.0, 0.0, 0.0, 4.0])))

trend = TrendBasis(degree_of_polynomial=2, backcast_size=insample_size, forecast_size=horizon)
print("trend basis", trend.forecast_time.shape, trend.forecast_time.requires_grad)
print(trend.forecast_time)
season = SeasonalityBasis(harmonics=1, backcast_size=insample_size, forecast_size=horizon)
print("season cos", season.forecast_cos_template.shape)
print(season.forecast_cos_template[:3])

series = make_series(12, 60, rng)
print("series", series.shape, series.dtype, np.round(series[0, :5], 4))

model = interpretable(input_size=insample_size, output_size=horizon, trend_blocks=2,
                      trend_layers=2, trend_layer_size=32, degree_of_polynomial=2,
                      seasonality_blocks=2, seasonality_layers=2, seasonality_layer_size=32,
                      num_of_harmonics=1)
print(model)
print("parameters", sum(p.numel() for p in model.parameters()),
      "trainable", sum(p.numel() for p in model.parameters() if p.requires_grad))
print("state dict keys", len(model.state_dict()), list(model.state_dict())[:4])

gmodel = generic(insample_size, horizon, stacks=3, layers=2, layer_size=32)

for name, net in (("interpretable", model), ("generic", gmodel)):
    optimizer = t.optim.Adam(net.parameters(), lr=1e-3)
    lr_decay_step = 30 // 3
    for i in range(30):
        net.train()
        x, x_mask, y, y_mask = map(t.tensor, sample_windows(series, insample_size, horizon, 32, rng))
        optimizer.zero_grad()
        forecast = net(x, x_mask)
        training_loss = smape_2_loss(forecast, y, y_mask)
        if np.isnan(float(training_loss)):
            break
        training_loss.backward()
        t.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        for param_group in optimizer.param_groups:
            param_group["lr"] = 1e-3 * 0.5 ** (i // lr_decay_step)
        if i % 5 == 0 or i == 29:
            print("%s iter %2d smape %.5f" % (name, i, training_loss.item()))

    net.eval()
    with t.no_grad():
        x, x_mask, y, y_mask = map(t.tensor, sample_windows(series, insample_size, horizon, 16, rng))
        forecast = net(x, x_mask)
        print(name, "test smape %.4f" % smape_2_loss(forecast, y, y_mask).item(),
              "mape %.4f" % mape_loss(forecast, y, y_mask).item(),
              "mase %.4f" % mase_loss(x, 6, forecast, y, y_mask).item())
