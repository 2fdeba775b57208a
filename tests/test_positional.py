import math

import torch

from model import cosine_similarity_matrix, similarity_by_distance, sinusoidal_positional_encoding


def test_rows_for_four_positions_base_100():
    expected = torch.tensor(
        [
            [0, 1, 0, 1],
            [0.841471, 0.540302, 0.099833, 0.995004],
            [0.909297, -0.416147, 0.198669, 0.980067],
            [0.141120, -0.989992, 0.295520, 0.955337],
        ]
    )
    torch.testing.assert_close(sinusoidal_positional_encoding(4, 4, base=100), expected, atol=1e-6, rtol=0)


def test_formula_for_every_column_with_odd_d_model():
    pe = sinusoidal_positional_encoding(9, 7, base=10000)
    assert pe.shape == (9, 7)
    for pos in range(9):
        for col in range(7):
            angle = pos / 10000 ** ((col - col % 2) / 7)
            value = math.sin(angle) if col % 2 == 0 else math.cos(angle)
            assert abs(pe[pos, col].item() - value) < 1e-6
    assert pe[:, 6].abs().max() < 1  # the last column is a sine: 0 at position 0
    assert pe[0, 6] == 0


def test_similarity_by_distance():
    pe = sinusoidal_positional_encoding(32, 16, base=100)
    sim = cosine_similarity_matrix(pe)
    torch.testing.assert_close(torch.diagonal(sim), torch.ones(32))
    distances, means = similarity_by_distance(sim)
    assert distances.tolist() == list(range(32))
    assert abs(means[0].item() - 1) < 1e-6
    assert means[1] > means[8]  # neighbours are more alike than distant positions
    manual = sum(sim[i, i + 3].item() for i in range(29)) / 29
    assert abs(means[3].item() - manual) < 1e-6
